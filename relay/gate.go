package relay

import (
	"context"
	"errors"
	"sync"
	"time"
)

var errShuttingDown = errors.New("relay is shutting down")

// gate counts store calls in flight: accept (every write) and gatedReader
// (every read) hold it. A connection handles messages in goroutines that
// nothing waits for (conn.spawn), and the services publish on their own, so
// without it a late message could reach badger after it was closed.
type gate struct {
	mu     sync.Mutex
	n      int
	closed bool
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *gate) exit() {
	g.mu.Lock()
	g.n--
	g.mu.Unlock()
}

// close refuses new calls and waits (until ctx ends) for those in flight.
func (g *gate) close(ctx context.Context) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	for {
		g.mu.Lock()
		n := g.n
		g.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}
