package wot_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/wot"
)

// The publisher signs a NIP-85 assertion per member with the service key,
// again only for what changed, and rank 0 for a key that left.
func TestPublishAssertions(t *testing.T) {
	seed, a, b := key("seed"), key("a"), key("b")
	w := newWoT(t, settingsWithSeeds(seed))
	apply(t, w, contactList(seed, 100, a, b))
	w.Rerank()
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	var sent []*nostr.Event
	p := &wot.Publisher{WoT: w, SecretKey: sk, Sink: func(_ context.Context, ev *nostr.Event) error {
		sent = append(sent, ev)
		return nil
	}, Log: discard}
	publish := func() map[string]nostr.Tags {
		t.Helper()
		sent = nil
		if _, err := p.Publish(context.Background()); err != nil {
			t.Fatal(err)
		}
		out := map[string]nostr.Tags{}
		for _, ev := range sent {
			if ok, _ := ev.CheckSignature(); !ok || ev.PubKey != pk || ev.Kind != wot.KindUserAssertion {
				t.Fatalf("assertion %v", ev)
			}
			out[ev.Tags.GetD()] = ev.Tags
		}
		return out
	}
	first := publish()
	if len(first) != 3 || first[hexKey(a)].Find("followers")[1] != "1" || first[hexKey(a)].Find("rank") == nil {
		t.Fatalf("first round: %v", first)
	}
	if again := publish(); len(again) != 0 {
		t.Fatalf("nothing changed, yet published %v", again)
	}
	apply(t, w, contactList(seed, 200, a))
	w.Rerank()
	changed := publish()
	if got := changed[hexKey(b)]; got == nil || got.Find("rank")[1] != "0" || got.Find("followers")[1] != "0" {
		t.Fatalf("b left: %v", changed)
	}
}

// The publisher's pause is a setting (the whole-program test shortens it),
// and one of zero, which would publish at every rank computation, is refused.
func TestPublishPauseSetting(t *testing.T) {
	s := wot.DefaultSettings()
	if err := s.Valid(); err != nil || s.PublishPause <= 0 {
		t.Fatalf("the defaults: pause %s, %v", s.PublishPause, err)
	}
	s.PublishPause = 0
	if err := s.Valid(); err == nil || !strings.Contains(err.Error(), "wot-publish-pause") {
		t.Fatalf("a pause of 0: %v", err)
	}
}
