package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestWebOfTrust runs outpost with a seed, the relay open to its web of
// trust only and the faucet gated on it: the seed's contact list on the
// relay makes its follow a member at once, a stranger is refused by both
// (but may still report), and when the seed unfollows the member, the
// member loses the faucet and the relay within 5 s.
func TestWebOfTrust(t *testing.T) {
	t.Parallel()
	seedSK, aliceSK, bobSK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	seedPK, _ := nostr.GetPublicKey(seedSK)
	alicePK, _ := nostr.GetPublicKey(aliceSK)
	inst := start(t, t.TempDir(), map[string]string{
		"OUTPOST_WOT_SEEDS": seedPK, "OUTPOST_RELAY_WRITE": "wot", "OUTPOST_FAUCET_WOT": "true",
		"OUTPOST_FAUCET_TEST_MINT_FUNDING": "20000", "OUTPOST_WOT_PUBLISH": "true",
	})
	r := connect(t, inst)
	f := inst.url + "/faucet"
	now := nostr.Now()
	contacts := func(at nostr.Timestamp, pks ...string) nostr.Event {
		ev := nostr.Event{Kind: nostr.KindFollowList, CreatedAt: at}
		for _, pk := range pks {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
		}
		if err := ev.Sign(seedSK); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	if err := publish(t, r, contacts(now-1, alicePK)); err != nil {
		t.Fatalf("the seed's contact list: %v", err)
	}
	if err := publish(t, r, note(t, aliceSK, "hello from the web of trust", 1)); err != nil {
		t.Fatalf("alice's note: %v", err)
	}
	err := publish(t, r, note(t, bobSK, "hello from outside", 1))
	if err == nil || !strings.Contains(err.Error(), "restricted:") {
		t.Fatalf("bob's note: %v, want restricted:", err)
	}
	if err := publish(t, r, note(t, bobSK, "spam", 1984, nostr.Tag{"p", alicePK, "spam"})); err != nil {
		t.Fatalf("bob's report (an open kind): %v", err)
	}

	quote := func(sk string) (int, map[string]any) {
		_, login := signedCall(t, sk, "POST", f+"/auth/login", nil)
		token, _ := login["token"].(string)
		return call(t, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}, "Authorization", "Bearer "+token)
	}
	if code, q := quote(aliceSK); code != 200 {
		t.Fatalf("alice's quote: %d %v", code, q)
	}
	if code, q := quote(bobSK); code != 403 || q["error"] != "not_in_web_of_trust" {
		t.Fatalf("bob's quote: %d %v", code, q)
	}

	if code, st := call(t, "GET", inst.url+"/wot/"+alicePK, nil); code != 200 || st["member"] != true || st["hops"] != 1.0 {
		t.Fatalf("GET /wot/alice: %d %v", code, st)
	}
	// The service key's NIP-85 assertion about alice, published as soon as she is a member.
	testkit.WaitFor(t, 30*time.Second, "the NIP-85 assertion about alice", func() bool {
		return len(query(t, r, nostr.Filter{Kinds: []int{30382}, Tags: nostr.TagMap{"d": {alicePK}}})) == 1
	})
	if err := publish(t, r, contacts(now)); err != nil {
		t.Fatalf("the seed's new contact list: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "alice refused by the faucet", func() bool {
		code, _ := quote(aliceSK)
		return code == 403
	})
	testkit.WaitFor(t, 5*time.Second, "alice refused by the relay", func() bool {
		err := publish(t, r, note(t, aliceSK, "still here?", 1))
		return err != nil && strings.Contains(err.Error(), "restricted:")
	})
}

// TestWebOfTrustFromUpstream: the seed's and its follow's contact lists are
// only on an upstream relay (another outpost, NIP-77); outpost fetches the
// seed's list, then — the walk having reached alice — alice's, and bob,
// whom only alice follows, stands at hop 2.
func TestWebOfTrustFromUpstream(t *testing.T) {
	t.Parallel()
	seedSK, aliceSK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	seedPK, _ := nostr.GetPublicKey(seedSK)
	alicePK, _ := nostr.GetPublicKey(aliceSK)
	bobPK, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	up := start(t, t.TempDir(), nil)
	publishWS(t, up, note(t, seedSK, "", nostr.KindFollowList, nostr.Tag{"p", alicePK}))
	publishWS(t, up, note(t, aliceSK, "", nostr.KindFollowList, nostr.Tag{"p", bobPK}))

	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_WOT_SEEDS": seedPK, "OUTPOST_UPSTREAM_RELAYS": up.ws})
	testkit.WaitFor(t, 30*time.Second, "bob at hop 2", func() bool {
		_, st := call(t, "GET", inst.url+"/wot/"+bobPK, nil)
		return st["hops"] == 2.0 && st["member"] == true
	})
	if _, st := call(t, "GET", inst.url+"/wot/"+alicePK, nil); st["hops"] != 1.0 {
		t.Fatalf("alice %v", st)
	}
}
