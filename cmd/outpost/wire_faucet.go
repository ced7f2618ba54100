package main

import "context"

// wireFaucet wires the faucet (issue: the faucet).
func wireFaucet(ctx context.Context, d deps) (*component, error) { return nil, nil }
