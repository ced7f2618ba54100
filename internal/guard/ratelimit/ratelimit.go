// Package ratelimit is a keyed rate limiter (GCRA): each key may make n
// requests per period, in bursts of up to n, and learns how long to wait when
// it may not. Idle keys are forgotten, so memory follows active clients.
package ratelimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// Limiter limits requests per key. A nil *Limiter allows everything.
type Limiter struct {
	interval time.Duration // time one request "costs"
	burst    time.Duration // how far ahead of now a key's schedule may run
	now      func() time.Time

	mu      sync.Mutex
	tat     map[string]time.Time // theoretical arrival time per key
	calls   int
	refused atomic.Uint64
}

// New allows n requests per period per key; n <= 0 returns nil (no limit).
// now may be nil (time.Now).
func New(n int, period time.Duration, now func() time.Time) *Limiter {
	if n <= 0 || period <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	interval := period / time.Duration(n)
	return &Limiter{interval: interval, burst: period - interval, now: now, tat: map[string]time.Time{}}
}

// Allow takes one request for key; when refused it says how long to wait.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, found := l.tat[key]
	if !found || tat.Before(now) {
		tat = now
	}
	if wait := tat.Sub(now) - l.burst; wait > 0 {
		l.refused.Add(1)
		return false, wait
	}
	l.tat[key] = tat.Add(l.interval)
	if l.calls++; l.calls%4096 == 0 {
		for k, t := range l.tat {
			if t.Before(now) {
				delete(l.tat, k)
			}
		}
	}
	return true, 0
}

// Keys is the number of keys currently remembered.
func (l *Limiter) Keys() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tat)
}

// Refused is how many requests Allow has refused, for metrics.
func (l *Limiter) Refused() uint64 {
	if l == nil {
		return 0
	}
	return l.refused.Load()
}
