// Package tick runs a function on a timer until its context ends: the one
// ticker loop of the background jobs (disk checks, keepalives, sweeps).
package tick

import (
	"context"
	"time"
)

// Every calls fn every d, the first time d from now, until ctx ends or fn
// returns false.
func Every(ctx context.Context, d time.Duration, fn func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !fn() {
				return
			}
		}
	}
}

// Now calls fn at once and then as Every does.
func Now(ctx context.Context, d time.Duration, fn func() bool) {
	if fn() {
		Every(ctx, d, fn)
	}
}

// A Ticker starts a loop's ticker: a channel that ticks every d, and the
// function that stops it. A loop takes one, as it takes its clock, so its
// tests step time (testkit.Ticker) instead of sleeping; nil is a time.Ticker.
type Ticker func(d time.Duration) (<-chan time.Time, func())

// Start starts t, or a time.Ticker when t is nil.
func (t Ticker) Start(d time.Duration) (<-chan time.Time, func()) {
	if t != nil {
		return t(d)
	}
	tk := time.NewTicker(d)
	return tk.C, tk.Stop
}
