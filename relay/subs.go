package relay

import (
	"context"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// sub is one REQ subscription. Until its stored events are sent it is not
// live: matching broadcasts wait in pending and follow EOSE, minus those the
// stored events already included, so every event reaches a subscription
// once, after or before EOSE but never twice.
type sub struct {
	c       *conn
	id      string
	filters nostr.Filters
	head    []byte // `["EVENT","<id>",`
	ctx     context.Context
	cancel  context.CancelFunc

	mu           sync.Mutex
	live, closed bool
	pending      []pendingEvent
	pendingBytes int
}

type pendingEvent struct {
	id [32]byte
	f  frame
}

func newSub(c *conn, id string, filters nostr.Filters) *sub {
	s := &sub{c: c, id: id, filters: filters, head: eventHead(id)}
	s.ctx, s.cancel = context.WithCancel(c.ctx)
	return s
}

// deliver queues a broadcast event for the subscription; it never waits. A
// client that cannot take it is dropped.
func (s *sub) deliver(id [32]byte, body []byte) {
	f := eventFrame(s.head, body)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
	case !s.live:
		if s.pendingBytes += f.size(); s.pendingBytes > s.c.out.limit {
			s.c.drop("too many events arrived while its stored events were read")
			return
		}
		s.pending = append(s.pending, pendingEvent{id, f})
	case !s.c.out.push(f):
		s.c.drop("its outbound queue is full")
	}
}

// goLive sends EOSE and what arrived meanwhile, and makes the subscription
// live; sent holds the ids of the stored events sent.
func (s *sub) goLive(sent *sentIDs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	ok := s.c.out.push(eoseMessage(s.id))
	for _, p := range s.pending {
		if ok && !sent.has(p.id) {
			ok = s.c.out.push(p.f)
		}
	}
	s.pending, s.pendingBytes, s.live = nil, 0, true
	if !ok {
		s.c.drop("its outbound queue is full")
	}
}

// close ends the subscription: no more events, and its stored-event query stops.
func (s *sub) close() {
	s.cancel()
	s.mu.Lock()
	s.closed, s.pending = true, nil
	s.mu.Unlock()
}

// registry holds every live or starting subscription of every connection.
// khatru's own listener list is never used: broadcasts read this one under
// its read lock while REQ, CLOSE and disconnects change it under the write
// lock.
type registry struct {
	mu   sync.RWMutex
	subs map[*sub]struct{}
}

func newRegistry() *registry { return &registry{subs: map[*sub]struct{}{}} }

func (g *registry) add(s *sub) {
	g.mu.Lock()
	g.subs[s] = struct{}{}
	g.mu.Unlock()
}

func (g *registry) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.subs)
}

func (g *registry) remove(s *sub) {
	g.mu.Lock()
	delete(g.subs, s)
	g.mu.Unlock()
}

// broadcast delivers ev (whose raw id is id, JSON body) to every
// subscription with a matching filter.
func (g *registry) broadcast(ev *nostr.Event, id [32]byte, body []byte) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for s := range g.subs {
		if s.filters.Match(ev) {
			s.deliver(id, body)
		}
	}
}
