package main

import (
	"fmt"
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
		"OUTPOST_WOT_PUBLISH_PAUSE": "100ms", // the first round (the seed) is at the start: alice's comes after the pause
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
// only on an upstream relay (another outpost, NIP-77) that outpost reads
// for its web of trust (OUTPOST_WOT_RELAYS); outpost fetches the seed's
// list, then — the walk having reached alice — alice's, and bob, whom only
// alice follows, stands at hop 2. When the seed unfollows alice there,
// alice loses her standing within 5 s: the faucet refuses her, and the
// relay with wot refuses her next note.
func TestWebOfTrustFromUpstream(t *testing.T) {
	t.Parallel()
	seedSK, aliceSK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	seedPK, _ := nostr.GetPublicKey(seedSK)
	alicePK, _ := nostr.GetPublicKey(aliceSK)
	bobPK, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	up := start(t, t.TempDir(), nil)
	now := nostr.Now()
	contacts := func(sk string, at nostr.Timestamp, pks ...string) nostr.Event {
		ev := nostr.Event{Kind: nostr.KindFollowList, CreatedAt: at}
		for _, pk := range pks {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
		}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	publishWS(t, up, contacts(seedSK, now-10, alicePK))
	publishWS(t, up, contacts(aliceSK, now-10, bobPK))

	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_WOT_SEEDS": seedPK, "OUTPOST_WOT_RELAYS": up.ws,
		"OUTPOST_RELAY_WRITE": "wot", "OUTPOST_FAUCET_WOT": "true", "OUTPOST_FAUCET_TEST_MINT_FUNDING": "20000"})
	testkit.WaitFor(t, 30*time.Second, "bob at hop 2", func() bool {
		_, st := call(t, "GET", inst.url+"/wot/"+bobPK, nil)
		return st["hops"] == 2.0 && st["member"] == true
	})
	if _, st := call(t, "GET", inst.url+"/wot/"+alicePK, nil); st["hops"] != 1.0 {
		t.Fatalf("alice %v", st)
	}
	r := connect(t, inst)
	if err := publish(t, r, note(t, aliceSK, "hello from the web of trust", 1)); err != nil {
		t.Fatalf("alice's note: %v", err)
	}
	quote := func() int {
		_, login := signedCall(t, aliceSK, "POST", inst.url+"/faucet/auth/login", nil)
		token, _ := login["token"].(string)
		code, _ := call(t, "POST", inst.url+"/faucet/claim/quote", map[string]any{"method": "cashu"}, "Authorization", "Bearer "+token)
		return code
	}
	if code := quote(); code != 200 {
		t.Fatalf("alice's quote: %d", code)
	}

	publishWS(t, up, contacts(seedSK, now, bobPK)) // the seed unfollows alice, upstream only
	testkit.WaitFor(t, 5*time.Second, "alice refused by the faucet and the relay", func() bool {
		err := publish(t, r, note(t, aliceSK, "still here?", 1))
		return quote() == 403 && err != nil && strings.Contains(err.Error(), "restricted:")
	})
}

// TestBanOnMembersReports: with OUTPOST_WOT_REPORT_BAN_MIN=2, reports
// (kind 1984, signed, through the relay) against mallory by any number of
// outsiders and by one member ban nothing; a second member's report bans
// mallory for OUTPOST_WOT_REPORT_BAN_FOR, with an audit entry naming both
// members. Two members reporting the seed ban nothing: a seed is never
// banned so.
func TestBanOnMembersReports(t *testing.T) {
	t.Parallel()
	seedSK, aliceSK, bobSK, mallorySK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	seedPK, _ := nostr.GetPublicKey(seedSK)
	alicePK, _ := nostr.GetPublicKey(aliceSK)
	bobPK, _ := nostr.GetPublicKey(bobSK)
	malloryPK, _ := nostr.GetPublicKey(mallorySK)
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_WOT_SEEDS": seedPK, "OUTPOST_WOT_REPORT_BAN_MIN": "2",
		"OUTPOST_WOT_REPORT_BAN_FOR": "2h"})
	r := connect(t, inst)
	if err := publish(t, r, note(t, seedSK, "", nostr.KindFollowList, nostr.Tag{"p", alicePK}, nostr.Tag{"p", bobPK})); err != nil {
		t.Fatal(err)
	}
	report := func(sk, pk string) {
		t.Helper()
		if err := publish(t, r, note(t, sk, "", 1984, nostr.Tag{"p", pk, "spam"})); err != nil {
			t.Fatalf("report: %v", err)
		}
	}
	blocked := func(pk string) bool {
		_, st := call(t, "GET", inst.url+"/banlist/blocked/pubkeys/"+pk, nil)
		return st["blocked"] == true
	}
	for range 3 {
		report(nostr.GeneratePrivateKey(), malloryPK)
	}
	report(aliceSK, malloryPK)
	report(aliceSK, malloryPK) // the same member twice is one reporter
	report(aliceSK, seedPK)
	report(bobSK, seedPK)
	if blocked(malloryPK) || blocked(seedPK) {
		t.Fatal("banned on one member's reports, or a seed banned")
	}
	report(bobSK, malloryPK)
	if !blocked(malloryPK) {
		t.Fatal("mallory not banned after reports by two members")
	}
	if err := publish(t, r, note(t, mallorySK, "still here", 1)); err == nil || !strings.Contains(err.Error(), "blocked:") {
		t.Fatalf("mallory's note: %v, want blocked:", err)
	}
	_, audit := call(t, "GET", inst.url+"/banlist/admin/audit?limit=10", nil, admin()...)
	entries, _ := audit["audit"].([]any)
	for _, e := range entries {
		e, _ := e.(map[string]any)
		after, _ := e["after"].(map[string]any)
		ban, _ := after["ban"].(map[string]any)
		if e["action"] != "ban.wot_reports" || e["target"] != malloryPK {
			continue
		}
		reporters := fmt.Sprint(after["reporters"])
		if e["actor"] != "wot-reports" || ban["expires_at"] == nil || !strings.Contains(reporters, alicePK) || !strings.Contains(reporters, bobPK) {
			t.Fatalf("audit entry %v", e)
		}
		unbanAndReportAgain(t, inst, r, malloryPK, blocked, aliceSK, bobSK)
		return
	}
	t.Fatalf("no audit entry of the ban: %v", audit)
}

// unbanAndReportAgain: a moderator lifts the ban; the reports it overruled
// do not count again, so one member's new report bans nothing, a second
// member's does.
func unbanAndReportAgain(t *testing.T, inst *instance, r *nostr.Relay, pk string, blocked func(string) bool, aSK, bSK string) {
	t.Helper()
	if code, _ := call(t, "POST", inst.url+"/banlist/admin/unban", map[string]any{"pubkey": pk}, admin()...); code != 200 {
		t.Fatalf("unban: %d", code)
	}
	report := func(sk string) { // dated after the lifting's second, from which reports count again
		t.Helper()
		ev := nostr.Event{Kind: 1984, CreatedAt: nostr.Now() + 2, Tags: nostr.Tags{{"p", pk, "spam"}}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		if err := publish(t, r, ev); err != nil {
			t.Fatalf("report: %v", err)
		}
	}
	report(aSK)
	if blocked(pk) {
		t.Fatal("banned again on the reports the unban overruled")
	}
	report(bSK)
	if !blocked(pk) {
		t.Fatal("not banned again after two members' new reports")
	}
}
