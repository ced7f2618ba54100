package upstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestPeer: another node of the same service is followed for every event
// it holds, not only the directory's, and past the budgets, which are for
// relays that are not ours; a URL listed as a relay and a peer is one peer.
func TestPeer(t *testing.T) {
	t.Parallel()
	up, local := newNode(t), newNode(t)
	var want []nostr.Event
	for range 15 {
		want = append(want, review(t, nostr.GeneratePrivateKey(), 4))
	}
	want = append(want, signed(t, nostr.GeneratePrivateKey(), 1), signed(t, nostr.GeneratePrivateKey(), 1984, nostr.Tag{"p", nostr.GeneratePrivateKey(), "spam"}),
		signed(t, nostr.GeneratePrivateKey(), 18166))
	up.put(t, want...)
	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Relays: []string{up.ws}, Peers: []string{up.ws}, RelayBudget: 5, Budget: 5}})
	testkit.WaitFor(t, 20*time.Second, "every event", func() bool { return local.count(t, nostr.Filter{}) == len(want) })
	h := relayHealth(t, s)
	if !h.Peer || h.Events.Stored != int64(len(want)) || h.Events.Dropped != 0 || h.PausedUntil != nil {
		t.Fatalf("health: %+v", h)
	}
	later := signed(t, nostr.GeneratePrivateKey(), 1)
	later.CreatedAt = nostr.Now()
	later.Sign(nostr.GeneratePrivateKey())
	up.put(t, later)
	testkit.WaitFor(t, 10*time.Second, "a note published there later to come over live", func() bool { return local.has(t, later.ID) })
}

func TestPeerSetting(t *testing.T) {
	t.Parallel()
	s := upstream.Settings{Peers: []string{"http://node.example"}}
	if s.Valid() == nil {
		t.Fatal("an http:// peer was accepted")
	}
	s = upstream.Settings{Peers: []string{"wss://node2.example/"}}
	if err := s.Valid(); err != nil || s.Peers[0] != "wss://node2.example" {
		t.Fatalf("%v %v", s.Peers, err)
	}
}

// TestCatchUpFromPeers measures what a node's catch-up from two peers
// moves against what it stores: both peers hold the events it lacks, and
// an older version of a profile whose newer version it holds. The two
// catch-ups run at once; each missed event is moved once (it was once per
// peer, 2.00× here, 2.2× with a handful missed and an older version
// fetched from each), and the older version once: refused "replaced:",
// it is not asked for again.
func TestCatchUpFromPeers(t *testing.T) {
	t.Parallel()
	a, b, local := newNode(t), newNode(t), newNode(t)
	const n = 600
	var missed []nostr.Event
	for range n {
		missed = append(missed, signed(t, nostr.GeneratePrivateKey(), 1))
	}
	sk := nostr.GeneratePrivateKey()
	old, held := signed(t, sk, 0), signed(t, sk, 0)
	common := signed(t, nostr.GeneratePrivateKey(), 1)
	for _, p := range []*node{a, b} {
		p.put(t, missed...)
		p.put(t, old, common)
	}
	local.put(t, held, common)
	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Peers: []string{a.ws, b.ws}}})
	testkit.WaitFor(t, 60*time.Second, "both catch-ups", func() bool {
		h := s.Health(context.Background())
		return h.Checks.Relays[0].LastSyncAt != nil && h.Checks.Relays[1].LastSyncAt != nil
	})
	var received, stored, duplicate int64
	for _, r := range s.Health(context.Background()).Checks.Relays {
		received, stored, duplicate = received+r.Events.Received, stored+r.Events.Stored, duplicate+r.Events.Duplicate
	}
	t.Logf("missed %d: received %d, stored %d, duplicate %d (%.2f×)", n, received, stored, duplicate, float64(received)/n)
	if local.count(t, nostr.Filter{Kinds: []int{1}}) != n+1 || stored != n {
		t.Fatalf("stored %d of the %d events missed", stored, n)
	}
	if received != stored+duplicate || received > n+1 {
		t.Fatalf("moved %d events for %d missed and 1 older version", received, n)
	}
}
