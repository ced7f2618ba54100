package upstream

import (
	"context"
	"sync"
	"time"
)

// Counters count what one relay sent.
type Counters struct {
	Received  int64 `json:"received"`    // events that arrived
	Stored    int64 `json:"stored"`      // new events taken in
	Duplicate int64 `json:"duplicate"`   // already held, or refused before
	Skipped   int64 `json:"skipped"`     // refused by the checks (signature, ban list, NIP-87, ...)
	Dropped   int64 `json:"over_budget"` // not taken: the budget was spent
}

// RelayHealth is one relay's state in /health.
type RelayHealth struct {
	URL         string   `json:"url"`
	Peer        bool     `json:"peer"` // another node of this service: every event, no budget
	Connected   bool     `json:"connected"`
	Method      *string  `json:"method"` // "negentropy" or "req", once known
	LastSyncAt  *string  `json:"last_sync_at"`
	LastError   *string  `json:"last_error"`
	LastErrorAt *string  `json:"last_error_at"`
	PausedUntil *string  `json:"paused_until"` // over budget
	Reconnects  int64    `json:"reconnects"`
	Events      Counters `json:"events"`
}

// Whether a relay answered NEG-OPEN: not yet asked, yes, no.
const (
	negUnknown = iota
	negYes
	negNo
)

// relayState is what the syncer knows of one relay.
type relayState struct {
	url  string
	peer bool // another node of this service (Settings.Peers)

	mu         sync.Mutex
	connected  bool
	negentropy int
	lastSync   time.Time // start of the last complete catch-up
	syncs      int64     // complete catch-ups (for tests: last_sync_at has whole seconds)
	lastErr    string
	lastErrAt  time.Time
	paused     time.Time
	reconnects int64
	counters   Counters
}

func (r *relayState) count(f func(*Counters)) {
	r.mu.Lock()
	f(&r.counters)
	r.mu.Unlock()
}

func (r *relayState) setConnected(ok bool) {
	r.mu.Lock()
	if ok && !r.connected && !r.lastErrAt.IsZero() {
		r.reconnects++
	}
	r.connected = ok
	r.mu.Unlock()
}

func (r *relayState) failed(err error, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connected = false
	if err != nil {
		r.lastErr, r.lastErrAt = err.Error(), now
	}
}

func (r *relayState) synced(at time.Time) {
	r.mu.Lock()
	r.lastSync = at
	r.syncs++
	r.mu.Unlock()
}

func (r *relayState) since() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSync
}

func (r *relayState) negMode() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.negentropy
}

func (r *relayState) setNeg(mode int) {
	r.mu.Lock()
	r.negentropy = mode
	r.mu.Unlock()
}

func (r *relayState) overBudget(until time.Time) {
	r.mu.Lock()
	r.paused = until
	r.counters.Dropped++
	r.mu.Unlock()
}

func (r *relayState) pausedUntil() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().After(r.paused) {
		return time.Time{}
	}
	return r.paused
}

func (r *relayState) health() RelayHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := RelayHealth{URL: r.url, Peer: r.peer, Connected: r.connected, Reconnects: r.reconnects, Events: r.counters,
		LastSyncAt: isoOrNil(r.lastSync), LastErrorAt: isoOrNil(r.lastErrAt), PausedUntil: isoOrNil(r.paused)}
	if r.lastErr != "" {
		e := r.lastErr
		h.LastError = &e
	}
	switch r.negentropy {
	case negYes:
		m := "negentropy"
		h.Method = &m
	case negNo:
		m := "req"
		h.Method = &m
	}
	if !r.paused.IsZero() && time.Now().After(r.paused) {
		h.PausedUntil = nil
	}
	return h
}

func isoOrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

// refusedSet remembers events the checks refused for a while, so that a
// relay offering them at every catch-up costs one lookup, not one
// signature check and one count each time. Entries last refusedFor: a ban
// lifted since lets them in then.
type refusedSet struct {
	mu sync.Mutex
	m  map[string]time.Time
}

const (
	refusedFor = time.Hour
	refusedMax = 100_000
)

func (s *refusedSet) add(id string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= refusedMax {
		for k, at := range s.m {
			if now.Sub(at) > refusedFor || len(s.m) >= refusedMax {
				delete(s.m, k)
			}
		}
	}
	s.m[id] = now
}

func (s *refusedSet) has(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.m[id]
	return ok && now.Sub(at) <= refusedFor
}

// claims are the ids the peers' sessions are fetching after a
// reconciliation, so that two peers' catch-ups do not both fetch an event
// the node missed. Each claim's channel closes when it is given back.
type claims struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// take claims those of ids no session has claimed (mine) and lists the
// others (theirs).
func (c *claims) take(ids []string) (mine, theirs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mine = make([]string, 0, len(ids))
	for _, id := range ids {
		if _, claimed := c.m[id]; claimed {
			theirs = append(theirs, id)
			continue
		}
		c.m[id] = make(chan struct{})
		mine = append(mine, id)
	}
	return mine, theirs
}

// give releases ids claimed.
func (c *claims) give(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		close(c.m[id])
		delete(c.m, id)
	}
}

// wait returns once none of ids is claimed, or with ctx's error.
func (c *claims) wait(ctx context.Context, ids []string) error {
	for _, id := range ids {
		c.mu.Lock()
		ch := c.m[id]
		c.mu.Unlock()
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
