package banlistapi_test

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// Reports carry their reporter's standing in the web of trust, and
// sort=reporter_wot puts the members' first whatever their age: here a
// stranger reports after a member and an anonymous API report comes last.
func TestReporterStanding(t *testing.T) {
	t.Parallel()
	seedSK, seedPK, _ := newKey()
	memberSK, memberPK, memberNPub := newKey()
	strangerSK, _, strangerNPub := newKey()
	_, reportedPK, _ := newKey()
	cfg := wot.DefaultSettings()
	cfg.Seeds = []string{seedPK}
	w, err := wot.New(wot.Config{Settings: cfg, DB: storetest.Open(t, storetest.Options{}).DB})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, options{trust: w})
	follows := nostr.Event{Kind: nostr.KindFollowList, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"p", memberPK}}}
	follows.Sign(seedSK)
	if err := w.Apply(&follows); err != nil {
		t.Fatal(err)
	}
	for i, sk := range []string{memberSK, strangerSK} {
		ev := nostr.Event{Kind: 1984, CreatedAt: nostr.Now() - 100 + nostr.Timestamp(i), Tags: nostr.Tags{{"p", reportedPK, "spam"}}}
		ev.Sign(sk)
		if _, err := e.st.Events.Save(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.api.Do("POST", "/reports", map[string]any{"reported_pubkey": reportedPK, "reason": "spam"}); r.Status != 201 {
		t.Fatalf("API report: %d %s", r.Status, r.Body)
	}

	list := func(query string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, r := range e.api.Do("GET", "/reports"+query, nil, bearer(adminKey)...).Map(t)["reports"].([]any) {
			out = append(out, r.(map[string]any))
		}
		return out
	}
	newest := list("")
	if len(newest) != 3 || newest[1]["reporter"] != strangerNPub || newest[2]["reporter"] != memberNPub {
		t.Fatalf("newest first: %v", newest)
	}
	sorted := list("?sort=reporter_wot")
	if len(sorted) != 3 || sorted[0]["reporter"] != memberNPub || sorted[1]["reporter"] != strangerNPub || sorted[2]["reporter"] != nil {
		t.Fatalf("by standing: %v", sorted)
	}
	if st := sorted[0]["reporter_wot"].(map[string]any); st["member"] != true || st["hops"] != 1.0 {
		t.Fatalf("the member's standing %v", st)
	}
	if st := sorted[1]["reporter_wot"].(map[string]any); st["member"] != false || st["hops"] != -1.0 {
		t.Fatalf("the stranger's standing %v", st)
	}
	if sorted[2]["reporter_wot"] != nil {
		t.Fatalf("an anonymous report's standing %v", sorted[2]["reporter_wot"])
	}
	if r := e.api.Do("GET", "/reports?sort=oldest", nil, bearer(adminKey)...); r.Status != 400 || r.ErrorCode() != "invalid_sort" {
		t.Fatalf("sort=oldest: %d %s", r.Status, r.Body)
	}
}
