package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Memory goes back to the system once, at the first quiet tick after work;
// not while collections keep coming, not again while idle.
func TestIdleWatch(t *testing.T) {
	t.Parallel()
	steps := []struct {
		collections int // since the tick before
		release     bool
	}{
		{0, false}, // idle from the start: nothing to give back
		{0, false},
		{3, false}, // busy
		{1, false}, // still busy
		{0, true},  // quiet after work: once
		{0, false}, // idle: not again
		{0, false},
		{2, false}, // work again
		{0, true},  // and quiet again
		{0, false},
	}
	w := idleWatch{last: 7}
	cycles := uint64(7)
	for i, s := range steps {
		cycles += uint64(s.collections)
		if got := w.quietAfterWork(cycles); got != s.release {
			t.Errorf("tick %d (%d collections since the one before): release %v, want %v", i, s.collections, got, s.release)
		}
	}
}

// The loop releases after work, and its own collection (the release
// collects) is not work: ticking on while idle releases nothing more.
func TestReturnIdleMemory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ticks := make(chan time.Time)
	var cycles atomic.Uint64
	released := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		returnIdleMemory(ctx, ticks, cycles.Load, func() { cycles.Add(1); released <- struct{}{} })
	}()
	// A send returns once the loop is back waiting: it has handled the
	// tick before.
	tick := func() {
		select {
		case ticks <- time.Time{}:
		case <-ctx.Done():
			t.Fatal("the loop stopped taking ticks")
		}
	}
	tick()
	cycles.Add(2) // work
	tick()
	tick() // quiet after it: a release
	tick()
	if n := len(released); n != 1 {
		t.Fatalf("%d releases after work, want 1", n)
	}
	tick()
	tick()
	tick()
	if n := len(released); n != 1 {
		t.Errorf("%d releases in all after idle ticks, want 1", n)
	}
	cancel()
	<-done
}
