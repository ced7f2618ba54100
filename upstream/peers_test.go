package upstream_test

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/upstream"
)

// TestPeer: another node of the same service is followed for every event
// it holds, not only the directory's, and past the budgets, which are for
// relays that are not ours; a URL listed as a relay and a peer is one peer.
func TestPeer(t *testing.T) {
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
	s := upstream.Settings{Peers: []string{"http://node.example"}}
	if s.Valid() == nil {
		t.Fatal("an http:// peer was accepted")
	}
	s = upstream.Settings{Peers: []string{"wss://node2.example/"}}
	if err := s.Valid(); err != nil || s.Peers[0] != "wss://node2.example" {
		t.Fatalf("%v %v", s.Peers, err)
	}
}
