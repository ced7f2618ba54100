package policies_test

import (
	"context"
	"testing"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/policies"
)

// The policies plug into any khatru relay (outpost's own relay takes the
// same signatures): a banned author and a blocked word are refused by
// khatru's AddEvent, a clean note is stored.
func TestPoliciesInAKhatruRelay(t *testing.T) {
	t.Parallel()
	bans := policies.NewBanList()
	sk := nostr.GeneratePrivateKey()
	banned, _ := nostr.GetPublicKey(sk)
	bans.Ban(policies.Ban{PubKey: banned, Reason: "spam"})
	bans.SetWords([]string{"scam"})
	db := &slicestore.SliceStore{}
	if err := db.Init(); err != nil {
		t.Fatal(err)
	}
	k := khatru.NewRelay()
	k.StoreEvent = append(k.StoreEvent, db.SaveEvent)
	k.RejectEvent = append(k.RejectEvent, policies.RejectBannedAuthors(bans), policies.RejectBlockedWords(bans))
	note := func(sk, content string) *nostr.Event {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: content, Tags: nostr.Tags{}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ctx := context.Background()
	other := nostr.GeneratePrivateKey()
	for _, tc := range []struct {
		ev   *nostr.Event
		want string
	}{
		{note(sk, "hello"), "blocked: you are banned from this relay: spam"},
		{note(other, "a scam"), `blocked: contains the blocked word "scam"`},
		{note(other, "hello"), ""},
	} {
		got := "" // stored
		if _, err := k.AddEvent(ctx, tc.ev); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.ev.Content, got, tc.want)
		}
	}
}
