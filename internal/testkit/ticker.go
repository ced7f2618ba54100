package testkit

import (
	"context"
	"sync"
	"time"
)

// Ticker is a loop's ticker (tick.Ticker: pass its Start) that ticks when
// the test says (Tick); the period asked for is ignored.
type Ticker struct {
	once sync.Once
	c    chan time.Time
}

func (m *Ticker) ch() chan time.Time {
	m.once.Do(func() { m.c = make(chan time.Time) })
	return m.c
}

// Start is the tick.Ticker.
func (m *Ticker) Start(time.Duration) (<-chan time.Time, func()) { return m.ch(), func() {} }

// Tick ticks once and returns when the loop has taken the tick, so a
// second Tick returns only after the loop has done with the first; or it
// returns ctx's error.
func (m *Ticker) Tick(ctx context.Context, at time.Time) error {
	select {
	case m.ch() <- at:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
