package relay_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// An event sent by a client and the same event sent by another relay
// (Ingest) get the same verdict in the same words, for every reason but
// those that are a client's alone (rate limits, authenticating).
func TestSameVerdictFromClientAndUpstream(t *testing.T) {
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, _ := newKey()
	held := sign(t, sk, 1, "held")
	deleted := sign(t, sk, 1, "regretted")
	w.mustPublish(held, deleted, sign(t, sk, 5, "", nostr.Tag{"e", deleted.ID}))
	bannedSK, bannedPK := newKey()
	if _, err := e.svc.Ban(context.Background(), "test", bannedPK, "spam", nil); err != nil {
		t.Fatal(err)
	}
	protected := sign(t, sk, 1, "mine", nostr.Tag{"-"})
	repost, _ := protected.MarshalJSON()
	past := strconv.FormatInt(int64(nostr.Now())-1, 10)
	cases := map[string]nostr.Event{
		"held already":     held,
		"deleted":          deleted,
		"wrong id":         func() nostr.Event { ev := sign(t, sk, 1, "x"); ev.Content = "y"; return ev }(),
		"bad signature":    func() nostr.Event { ev := sign(t, sk, 1, "x"); ev.Sig = strings.Repeat("0", 128); return ev }(),
		"kind over 65535":  sign(t, sk, 70000, "x"),
		"long tag value":   sign(t, sk, 1, "x", nostr.Tag{"t", strings.Repeat("v", 1025)}),
		"kind 22242":       sign(t, sk, 22242, "", nostr.Tag{"challenge", "x"}),
		"expired":          sign(t, sk, 1, "x", nostr.Tag{"expiration", past}),
		"bad expiration":   sign(t, sk, 1, "x", nostr.Tag{"expiration", "soon"}),
		"banned author":    sign(t, bannedSK, 1, "x"),
		"protected repost": sign(t, sk, 6, string(repost)),
	}
	for name, ev := range cases {
		ok, reason := w.publish(ev)
		upOK, upReason := e.rl.Ingest(context.Background(), &ev)
		if ok != upOK || reason != upReason {
			t.Errorf("%s: a client got %v %q, upstream %v %q", name, ok, reason, upOK, upReason)
		}
		if ok != (name == "held already") || reason == "" {
			t.Errorf("%s: %v %q", name, ok, reason)
		}
	}
}
