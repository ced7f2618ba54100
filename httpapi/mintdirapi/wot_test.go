package mintdirapi_test

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/wot"
	"github.com/outpost-relay/outpost/relay"
)

// wotOn is a web of trust (without seeds) on st that takes the contact
// lists rl saves, as outpost wires it (a viewer outside it is answered from
// the relay's store); it returns its FollowsOf.
func wotOn(t *testing.T, st *store.Store, rl *relay.Relay) func(viewer, author string) bool {
	t.Helper()
	w, err := wot.New(wot.Config{DB: st.DB, Events: st.Events})
	if err != nil {
		t.Fatal(err)
	}
	rl.OnEventSaved = append(rl.OnEventSaved, func(_ context.Context, ev *nostr.Event) {
		if ev.Kind == nostr.KindFollowList {
			if err := w.Apply(ev); err != nil {
				t.Error(err)
			}
		}
	})
	return w.FollowsOf
}
