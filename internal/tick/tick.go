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
