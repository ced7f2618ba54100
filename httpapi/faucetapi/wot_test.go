package faucetapi_test

import (
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// TestWoTGate: with --faucet-wot a key the seeds do not reach gets 403
// not_in_web_of_trust saying what it lacks, /auth/me shows the standing,
// and a member unfollowed by the seed loses the faucet at once.
func TestWoTGate(t *testing.T) {
	t.Parallel()
	seedSK := nostr.GeneratePrivateKey()
	seedPK, _ := nostr.GetPublicKey(seedSK)
	cfg := wot.DefaultSettings()
	cfg.Seeds = []string{seedPK}
	w, err := wot.New(wot.Config{Settings: cfg, DB: storetest.Open(t, storetest.Options{}).DB})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, 1000, func(c *faucet.Config) { c.WoT, c.WoTMaxHops, c.WoTMinFollowers, c.Trust = true, 2, 1, w })
	member := e.newUser("member", theMint, map[string]any{"name": "member"})
	stranger := e.newUser("stranger", theMint, map[string]any{"name": "stranger"})
	follow := func(at nostr.Timestamp, pks ...string) {
		t.Helper()
		ev := nostr.Event{Kind: nostr.KindFollowList, CreatedAt: at}
		for _, pk := range pks {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
		}
		ev.Sign(seedSK)
		if err := w.Apply(&ev); err != nil {
			t.Fatal(err)
		}
	}
	follow(nostr.Now()-10, member.pk)

	e.login(member)
	e.quote(member, map[string]any{"method": "cashu"})
	if st := e.as(member, "GET", "/auth/me", nil).Map(t)["wot"].(map[string]any); st["hops"] != 1.0 || st["member"] != true || st["missing"] != nil {
		t.Fatalf("member's standing %v", st)
	}

	e.login(stranger)
	r := e.as(stranger, "POST", "/claim/quote", map[string]any{"method": "cashu"})
	want(t, r, 403, "not_in_web_of_trust")
	me := e.as(stranger, "GET", "/auth/me", nil).Map(t)
	if st := me["wot"].(map[string]any); st["hops"] != -1.0 || st["member"] != false || st["gated"] != true ||
		st["missing"] != "no one in the web of trust follows you within 2 hops of its seeds" {
		t.Fatalf("stranger's standing %v", st)
	}
	if reasons := strs(me["eligibility"].(map[string]any)["reasons"]); !slices.Contains(reasons, "not_in_web_of_trust") {
		t.Fatalf("stranger's eligibility reasons %v", reasons)
	}

	follow(nostr.Now(), stranger.pk) // the seed's new list drops the member
	want(t, e.as(member, "POST", "/claim/quote", map[string]any{"method": "cashu"}), 403, "not_in_web_of_trust")
	e.quote(stranger, map[string]any{"method": "cashu"})
}
