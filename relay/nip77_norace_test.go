//go:build !race

package relay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// go-nostr's NIP-77 client syncs both ways with the relay. (Its
// NegentropySync races with itself, in its id pool and its use of the local
// store, so this runs without -race; .ci/run runs it.)
func TestNIP77NegentropySync(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, pk := newKey()
	onRelay := []nostr.Event{sign(t, sk, 1, "a"), sign(t, sk, 1, "b"), sign(t, sk, 1, "shared")}
	w.mustPublish(onRelay...)
	local := &slicestore.SliceStore{}
	local.Init()
	for _, ev := range []nostr.Event{onRelay[2], sign(t, sk, 1, "local only")} {
		local.SaveEvent(context.Background(), &ev)
	}
	p := relaytest.NewProxy(t, strings.TrimPrefix(e.url, "http://"))
	t.Cleanup(p.Freeze)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := nip77.NegentropySync(ctx, eventstore.RelayWrapper{Store: local}, "ws://"+p.Addr(), nostr.Filter{Authors: []string{pk}}, nip77.Both)
	if err != nil {
		t.Fatalf("NegentropySync: %v", err)
	}
	if n, _ := local.CountEvents(ctx, nostr.Filter{}); n != 4 {
		t.Fatalf("the local store has %d events after the sync, want 4", n)
	}
	// The upload is not waited for by NegentropySync: give it a moment.
	testkit.WaitFor(t, 5*time.Second, "the relay to get the local-only event", func() bool {
		return len(w.req("r", object{"authors": []string{pk}})) == 4
	})
}
