// Package tick runs a function on a timer until its context ends: the one
// ticker loop of the background jobs (disk checks, keepalives, sweeps).
package tick

import (
	"context"
	"sync"
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
// tests step time (Manual) instead of sleeping; nil is a time.Ticker.
type Ticker func(d time.Duration) (<-chan time.Time, func())

// Start starts t, or a time.Ticker when t is nil.
func (t Ticker) Start(d time.Duration) (<-chan time.Time, func()) {
	if t != nil {
		return t(d)
	}
	tk := time.NewTicker(d)
	return tk.C, tk.Stop
}

// Manual is a Ticker that ticks when a test says (Tick); the period asked
// for is ignored.
type Manual struct {
	once sync.Once
	c    chan time.Time
}

func (m *Manual) ch() chan time.Time {
	m.once.Do(func() { m.c = make(chan time.Time) })
	return m.c
}

// Start is the Ticker (pass m.Start).
func (m *Manual) Start(time.Duration) (<-chan time.Time, func()) { return m.ch(), func() {} }

// Tick ticks once and returns when the loop has taken the tick, so a
// second Tick returns only after the loop has done with the first; or it
// returns ctx's error.
func (m *Manual) Tick(ctx context.Context, at time.Time) error {
	select {
	case m.ch() <- at:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
