package relay_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/relay"
)

// TestImportAdmitsAsUpstream: Import refuses what the relay refuses from
// another relay, in its words, and stores the rest; a deletion request
// refuses what it names later in the same batch, by id and by address, as
// one stored earlier would.
func TestImportAdmitsAsUpstream(t *testing.T) {
	e := newEnv(t, withLimits(func(l *relay.Limits) { l.MaxEventTags = 3 }))
	ctx := context.Background()
	sk, banned := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	bannedPK, _ := nostr.GetPublicKey(banned)
	if _, err := e.svc.Ban(ctx, "test", bannedPK, "spam", nil); err != nil {
		t.Fatal(err)
	}
	note := relaytest.Sign(t, sk, 1, "deleted later in the file")
	article := relaytest.Sign(t, sk, 30023, "withdrawn", nostr.Tag{"d", "a"})
	article.CreatedAt -= 10
	article.Sign(sk)
	pk, _ := nostr.GetPublicKey(sk)
	del := relaytest.Sign(t, sk, 5, "", nostr.Tag{"e", note.ID}, nostr.Tag{"a", "30023:" + pk + ":a"})
	forged := relaytest.Sign(t, sk, 1, "forged")
	forged.Content = "changed"
	expired := relaytest.Sign(t, sk, 1, "gone", nostr.Tag{"expiration", strconv.FormatInt(int64(nostr.Now())-10, 10)})
	batch := []nostr.Event{
		relaytest.Sign(t, sk, 1, "kept"),
		relaytest.Sign(t, banned, 1, "banned"),
		del, note, article,
		forged, expired,
		relaytest.Sign(t, sk, 20001, "ephemeral"),
		relaytest.Sign(t, sk, 1, "too many tags", nostr.Tag{"t", "1"}, nostr.Tag{"t", "2"}, nostr.Tag{"t", "3"}, nostr.Tag{"t", "4"}),
		relaytest.Sign(t, sk, 1, "protected", nostr.Tag{"-"}),
	}
	want := []string{"", "blocked: ", "", "blocked: this event was deleted by its author", "blocked: this event was deleted by its author",
		"invalid: the id is not the hash of the event", "invalid: this event has expired", "invalid: ephemeral events are not stored",
		"invalid: 4 tags, at most 3 allowed", "restricted: "}
	var evs []*nostr.Event
	for i := range batch {
		evs = append(evs, &batch[i])
	}
	res, err := e.rl.Import(ctx, evs, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if len(r.Reason) < len(want[i]) || r.Reason[:len(want[i])] != want[i] || (want[i] == "") != (r.Reason == "") {
			t.Errorf("event %d (%q): %q, want %q", i, batch[i].Content, r.Reason, want[i])
		} else if r.Reason == "" && r.Outcome != events.Stored {
			t.Errorf("event %d: %v", i, r.Outcome)
		}
	}
	n, err := e.st.Events.Count(ctx, []nostr.Filter{{Authors: []string{pk}}}, nil)
	if err != nil || n != 2 {
		t.Errorf("%d events stored (%v), want the note kept and the deletion request", n, err)
	}
	// Vouched for by the operator, the protected event is taken in.
	res, err = e.rl.Import(ctx, evs[len(evs)-1:], true)
	if err != nil || res[0].Reason != "" || res[0].Outcome != events.Stored {
		t.Errorf("a protected event, kept: %+v, %v", res, err)
	}
}
