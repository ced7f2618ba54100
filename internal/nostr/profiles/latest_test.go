package profiles_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/guard/netguard"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// TestLatest: a user's newest kind 10019 is found on the write relays of
// their kind 10002 when the store and the configured relays hold only an
// older one; those relays are dialled with NetDial, so a guarded dialer
// keeps them off private addresses.
func TestLatest(t *testing.T) {
	t.Parallel()
	local, localStore := relaytest.Start(t)
	theirs, _ := relaytest.Start(t)
	theirsWS := "ws" + strings.TrimPrefix(theirs.URL, "http")
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	now := time.Now()
	info := func(at time.Time, relay string) nostr.Event {
		ev := signAt(t, sk, 10019, "", at)
		ev.Tags = nostr.Tags{{"relay", relay}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	list := signAt(t, sk, profiles.KindRelayList, "", now.Add(-time.Hour))
	list.Tags = nostr.Tags{{"r", theirsWS, "write"}, {"r", "wss://read.example", "read"}, {"r", "not a url"}}
	if err := list.Sign(sk); err != nil {
		t.Fatal(err)
	}
	old, newer := info(now.Add(-time.Hour), "wss://old.example"), info(now.Add(-time.Minute), theirsWS)
	publish(t, local, old, list)
	publish(t, theirs, newer)

	f := &profiles.Fetcher{Local: localStore.Events, NetDial: (&net.Dialer{}).DialContext}
	ev, failed := f.Latest(context.Background(), pk, 10019)
	if ev == nil || ev.ID != newer.ID || len(failed) != 0 {
		t.Fatalf("found %v, failed %v", ev, failed)
	}
	if ev, _ := f.Latest(context.Background(), nostr.GeneratePrivateKey(), 10019); ev != nil {
		t.Fatalf("someone else's: %v", ev)
	}

	f.NetDial = (&net.Dialer{Control: netguard.Control}).DialContext
	ev, failed = f.Latest(context.Background(), pk, 10019)
	if ev == nil || ev.ID != old.ID || len(failed) != 1 || failed[0] != theirsWS {
		t.Fatalf("guarded: found %v, failed %v", ev, failed)
	}
}
