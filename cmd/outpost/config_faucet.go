package main

// FaucetConfig configures the faucet (issue: the faucet).
type FaucetConfig struct{}

func registerFaucetFlags(f *configFlags) {}

func validateFaucet(f *configFlags) error { return nil }
