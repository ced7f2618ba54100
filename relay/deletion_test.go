package relay_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// NIP-09 over a websocket: a deleted event stays refused while a deletion
// request of its author naming it is stored, and only that long.
func TestDeletionLastsAsLongAsItsRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, _ := relaytest.Dial(t, e.srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sk, _ := relaytest.NewKey()
	refused := func(t *testing.T, ev nostr.Event) bool {
		t.Helper()
		err := relaytest.Publish(t, c, ev)
		if err != nil && !strings.Contains(err.Error(), "blocked: this event was deleted by its author") {
			t.Fatalf("publishing %s: %v", ev.ID, err)
		}
		return err != nil
	}
	remove := func(t *testing.T, ev nostr.Event) {
		t.Helper()
		if deleted, err := e.st.Events.Delete(ctx, ev.ID); err != nil || !deleted {
			t.Fatalf("removing %s: %v %v", ev.ID, deleted, err)
		}
	}

	t.Run("a stranger's request does not count", func(t *testing.T) {
		note := relaytest.Sign(t, sk, 1, "mine")
		stranger, _ := relaytest.NewKey()
		if refused(t, relaytest.Sign(t, stranger, 5, "", nostr.Tag{"e", note.ID})) || refused(t, note) {
			t.Fatal("refused")
		}
	})
	t.Run("deleted, then back once the request is removed", func(t *testing.T) {
		note := relaytest.Sign(t, sk, 1, "regret")
		del := relaytest.Sign(t, sk, 5, "", nostr.Tag{"e", note.ID})
		if refused(t, note) || refused(t, del) {
			t.Fatal("refused")
		}
		if !refused(t, note) {
			t.Fatal("a deleted event was accepted again")
		}
		remove(t, del) // as an operator does
		if refused(t, note) {
			t.Fatal("refused after its deletion request was removed")
		}
	})
	t.Run("two requests, one removed: still deleted", func(t *testing.T) {
		note := relaytest.Sign(t, sk, 1, "twice")
		first := relaytest.Sign(t, sk, 5, "", nostr.Tag{"e", note.ID})
		second := relaytest.Sign(t, sk, 5, "really", nostr.Tag{"e", note.ID})
		if refused(t, first) || refused(t, second) {
			t.Fatal("refused")
		}
		remove(t, first)
		if !refused(t, note) {
			t.Fatal("accepted with one of its two deletion requests left")
		}
		remove(t, second)
		if refused(t, note) {
			t.Fatal("refused after both deletion requests were removed")
		}
	})
	t.Run("a request that expires (NIP-40) stops counting", func(t *testing.T) {
		note := relaytest.Sign(t, sk, 1, "for now")
		at := time.Now().Add(2 * time.Second).Unix()
		del := relaytest.Sign(t, sk, 5, "", nostr.Tag{"e", note.ID}, nostr.Tag{"expiration", strconv.FormatInt(at, 10)})
		if refused(t, del) {
			t.Fatal("refused")
		}
		if !refused(t, note) {
			t.Fatal("accepted before the deletion request expired")
		}
		testkit.Past(time.Unix(at, 0).Add(100 * time.Millisecond))
		if refused(t, note) {
			t.Fatal("refused after the deletion request expired")
		}
		if n, err := e.st.Events.DeleteExpired(ctx, nostr.Now()); err != nil || n != 1 {
			t.Fatalf("sweeping the expired request: %d %v", n, err)
		}
		if got := relaytest.Query(t, c, nostr.Filter{IDs: []string{note.ID}}); len(got) != 1 {
			t.Fatalf("after the sweep: %v", got)
		}
	})
}
