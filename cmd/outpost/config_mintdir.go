package main

// MintdirConfig configures the mint directory (issue: the mint directory).
type MintdirConfig struct{}

func registerMintdirFlags(f *configFlags) {}

func validateMintdir(f *configFlags) error { return nil }
