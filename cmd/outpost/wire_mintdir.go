package main

import "context"

// wireMintdir wires the mint directory (issue: the mint directory).
func wireMintdir(ctx context.Context, d deps) (*component, error) { return nil, nil }
