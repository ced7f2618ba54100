package main

import (
	"errors"
	"time"
)

// MintdirConfig configures the mint directory.
type MintdirConfig struct {
	Mount            string
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	ProbeConcurrency int
	ProbeSlowMs      int
	AllowPrivate     bool
	SubmitLimit      int // POST /mints/submit per client IP per hour
}

func registerMintdirFlags(f *configFlags) {
	c, fs := &f.c.Mintdir, f.fs
	fs.StringVar(&c.Mount, "mintdir-mount", "/mintdir", "mount path of the mint directory")
	fs.DurationVar(&c.ProbeInterval, "probe-interval", 5*time.Minute, "how often each mint is checked (jittered ±10%)")
	fs.DurationVar(&c.ProbeTimeout, "probe-timeout", 10*time.Second, "timeout of one request to a mint; below the interval")
	fs.IntVar(&c.ProbeConcurrency, "probe-concurrency", 16, "checks in flight at once, over all mints")
	fs.IntVar(&c.ProbeSlowMs, "probe-slow-ms", 2000, "a reachable mint slower than this (ms) is degraded")
	fs.BoolVar(&c.AllowPrivate, "probe-allow-private", false, "allow mints on private, loopback and link-local addresses (local tests only)")
	fs.IntVar(&c.SubmitLimit, "mintdir-submit-rate-limit", 10, "POST /mintdir/mints/submit per hour per client IP; 0 disables")
}

func validateMintdir(f *configFlags) error {
	c := f.c.Mintdir
	var errs []error
	if err := validMount(c.Mount); err != nil {
		errs = append(errs, bad("mintdir-mount", "%v", err))
	} else if c.Mount == f.c.Banlist.Mount {
		errs = append(errs, bad("mintdir-mount", "%s is the ban list's mount too", c.Mount))
	}
	if c.ProbeInterval < time.Second {
		errs = append(errs, bad("probe-interval", "must be at least 1s, got %v", c.ProbeInterval))
	}
	if c.ProbeTimeout <= 0 || c.ProbeTimeout >= c.ProbeInterval {
		errs = append(errs, bad("probe-timeout", "must be positive and below --probe-interval (%v), got %v", c.ProbeInterval, c.ProbeTimeout))
	}
	if c.ProbeConcurrency < 1 || c.ProbeConcurrency > 1000 {
		errs = append(errs, bad("probe-concurrency", "must be from 1 to 1000"))
	}
	if c.ProbeSlowMs < 1 {
		errs = append(errs, bad("probe-slow-ms", "must be at least 1"))
	}
	if c.SubmitLimit < 0 {
		errs = append(errs, bad("mintdir-submit-rate-limit", "must be 0 or more"))
	}
	return errors.Join(errs...)
}
