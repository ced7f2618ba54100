package nostrclient

import (
	"cmp"
	"math/rand/v2"
	"time"
)

// Backoff spaces out reconnects to a relay. Each wait is drawn from the
// upper half of a span that doubles, from Min up to Max, after every
// attempt; the jitter keeps many clients of one relay from coming back all
// at once. The span is back to Min after an attempt that stayed up Healthy
// (or that the caller judged healthy: Reset), so a relay that was fine for
// a while is retried soon after one failure.
type Backoff struct {
	Min, Max time.Duration // default 1s, 1m
	Healthy  time.Duration // default 1m
	Now      func() time.Time
	Rand     func(n int64) int64 // in [0, n); default math/rand/v2's

	span  time.Duration
	start time.Time
}

// Start marks the start of an attempt.
func (b *Backoff) Start() { b.start = b.now() }

// Reset sets the span back to Min.
func (b *Backoff) Reset() { b.span = 0 }

// Next returns the wait after an attempt ended, and widens the span.
func (b *Backoff) Next() time.Duration {
	if !b.start.IsZero() && b.now().Sub(b.start) >= cmp.Or(b.Healthy, time.Minute) {
		b.span = 0
	}
	if b.span == 0 { // a Max below Min (or its default) bounds the first span too
		b.span = min(cmp.Or(b.Min, time.Second), cmp.Or(b.Max, time.Minute))
	}
	half := b.span / 2
	wait := half
	if half > 0 {
		r := b.Rand
		if r == nil {
			r = rand.Int64N
		}
		wait += time.Duration(r(int64(half)))
	}
	b.span = min(2*b.span, cmp.Or(b.Max, time.Minute))
	return wait
}

func (b *Backoff) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}
