package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// NIP-01 keeps one event per address of a replaceable (kind 0, 10002) or
// addressable (30000-range, by d) kind: the newest, and of two at the same
// second the lowest id. An older version is not stored, and a client sent
// OK true for it would believe it saved; the relay answers OK false
// "replaced: have newer event", as strfry does. A go-nostr client sees the
// OK frame's reason in Publish's error.
func TestOlderReplaceableIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := relaytest.Dial(t, e.url)
	const replaced = "msg: replaced: have newer event"
	sk, pk := newKey()
	for _, tc := range []struct {
		kind int
		tags nostr.Tags
	}{
		{0, nil},
		{10002, nostr.Tags{{"r", "wss://relay.example"}}},
		{30000, nostr.Tags{{"d", "friends"}}},
		{30023, nil}, // no d tag: the address d=""
	} {
		t.Run(fmt.Sprint(tc.kind), func(t *testing.T) {
			publish := func(ev nostr.Event, want string) {
				t.Helper()
				err := c.Publish(ctx, ev)
				if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
					t.Fatalf("%s at %d: OK reason %q, want %q", ev.Content, ev.CreatedAt, got, want)
				}
			}
			held := func(want nostr.Event) {
				t.Helper()
				f := nostr.Filter{Kinds: []int{tc.kind}, Authors: []string{pk}}
				if d := tc.tags.Find("d"); d != nil {
					f.Tags = nostr.TagMap{"d": {d[1]}}
				}
				got := relaytest.Query(t, c, f)
				if len(got) != 1 || got[0].ID != want.ID {
					t.Fatalf("held %v, want only %s (%s)", got, want.ID, want.Content)
				}
			}
			at := nostr.Now() - 100
			version := func(dt nostr.Timestamp, content string) nostr.Event {
				return signAt(t, sk, at+dt, tc.kind, content, tc.tags...)
			}
			v1 := version(0, "v1")
			publish(v1, "")
			publish(version(-1, "older"), replaced)
			held(v1)
			publish(v1, "")                         // the held version again: duplicate, OK true
			publish(version(-1, "older"), replaced) // refused again
			v2 := version(1, "v2")
			publish(v2, "")
			held(v2)
			publish(v1, replaced) // once replaced, never back
			held(v2)

			// Two versions of one second: the lowest id wins, whichever comes first.
			var lower, higher *nostr.Event
			for i := 0; lower == nil || higher == nil; i++ {
				ev := version(1, fmt.Sprint("tie ", i))
				switch {
				case ev.ID < v2.ID && lower == nil:
					lower = &ev
				case ev.ID > v2.ID && higher == nil:
					higher = &ev
				}
			}
			publish(*higher, replaced)
			held(v2)
			publish(*lower, "")
			held(*lower)
			publish(v2, replaced)
			held(*lower)
		})
	}
	if t.Failed() {
		return
	}
	// Another address of the same kind and author is another event.
	other := signAt(t, sk, nostr.Now()-1000, 30000, "others", nostr.Tag{"d", "others"})
	if err := c.Publish(ctx, other); err != nil {
		t.Fatalf("an addressable event at another address: %v", err)
	}
}
