package upstream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestNothingComesTwice: reviews published upstream just before the sync
// starts (inside any overlap of the live subscription's since) arrive once
// each: the live subscription does not send again what the catch-up
// fetched, neither on the first connection, nor at a resync, nor after a
// reconnect. A review published later arrives once, live.
func TestNothingComesTwice(t *testing.T) {
	t.Parallel()
	up, local := newNode(t), newNode(t)
	const n = 50
	now := time.Now()
	for i := range n {
		ev := review(t, nostr.GeneratePrivateKey(), 4)
		ev.CreatedAt = nostr.Timestamp(now.Add(-time.Duration(i) * time.Second).Unix())
		ev.Sign(nostr.GeneratePrivateKey())
		up.put(t, ev)
	}
	proxy := testkit.NewProxy(t, up.addr)
	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Relays: []string{"ws://" + proxy.Addr()}}, Resync: 100 * time.Millisecond})
	testkit.WaitFor(t, 20*time.Second, "the reviews", func() bool { return local.count(t, reviewsAndAnnouncements) == n })
	want := func(when string, received int64) {
		t.Helper()
		if c := relayHealth(t, s).Events; c.Received != received || c.Stored != received || c.Duplicate != 0 {
			t.Fatalf("%s: %+v, want %d received and stored, no duplicate", when, c, received)
		}
	}
	resyncs(t, s, 2)
	want("after the catch-up and resyncs", n)

	proxy.Down()
	testkit.WaitFor(t, 10*time.Second, "the relay to be seen gone", func() bool { return !relayHealth(t, s).Connected })
	proxy.Up(t)
	testkit.WaitFor(t, 20*time.Second, "a reconnect", func() bool { h := relayHealth(t, s); return h.Connected && h.Reconnects >= 1 })
	resyncs(t, s, 1)
	want("after a reconnect", n)

	later := review(t, nostr.GeneratePrivateKey(), 5)
	later.CreatedAt = nostr.Now()
	later.Sign(nostr.GeneratePrivateKey())
	up.put(t, later)
	testkit.WaitFor(t, 10*time.Second, "the review published later", func() bool { return local.has(t, later.ID) })
	resyncs(t, s, 1)
	want("after a live review", n+1)
}

// resyncs waits until k catch-ups that began after the call have
// completed: k+1 completions, since one may have been under way.
func resyncs(t *testing.T, s *upstream.Syncer, k int) {
	t.Helper()
	after := upstream.Syncs(s)
	testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("%d resyncs", k), func() bool { return upstream.Syncs(s) >= after+int64(k)+1 })
}
