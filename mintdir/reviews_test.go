package mintdir

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func signed(t *testing.T, sk string, kind int, at time.Time, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()), Content: content, Tags: tags}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// save stores ev as the relay would and runs the directory's hook.
func (e *env) save(ev *nostr.Event) {
	e.t.Helper()
	if reject, msg := RejectInvalidNIP87(e.ctx, ev); reject {
		e.t.Fatalf("rejected: %s", msg)
	}
	if _, err := e.st.Events.Save(e.ctx, ev); err != nil {
		e.t.Fatal(err)
	}
	e.dir.OnEventSaved(e.ctx, ev)
	for len(e.dir.work) > 0 {
		(<-e.dir.work)(e.ctx)
	}
}

func TestReviews(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	f := newFakeMint(t, "Reviewed", pk1)
	m := e.probe(e.submit(f.URL))
	k := nostr.Tag{"k", "38172"}
	base := time.Unix(1_800_000_000, 0)
	alice, bob, carol, dave, op := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	opPub, _ := nostr.GetPublicKey(op)
	f.Set("contact", []any{[]any{"nostr", opPub}})
	e.clock.Add(time.Minute)
	m = e.probe(m.ID.String())

	// Alice reviews twice: the newer one wins. Her first spells the URL with a slash and upper case.
	e.save(signed(t, alice, 38000, base, "[2/5] meh", k, nostr.Tag{"d", pk1}, nostr.Tag{"u", strings.ToUpper(f.URL) + "/"}))
	e.save(signed(t, alice, 38000, base.Add(time.Hour), "[5/5] great now", k, nostr.Tag{"d", "other-d"}, nostr.Tag{"u", f.URL}))
	// Bob: a rating tag wins over the prefix, which is still removed.
	e.save(signed(t, bob, 38000, base.Add(2*time.Hour), "[1/5] fine", k, nostr.Tag{"d", pk1}, nostr.Tag{"rating", "4"}))
	// Carol: no rating at all; found by the URL spelled oddly (only the alias index finds it).
	e.save(signed(t, carol, 38000, base.Add(3*time.Hour), "works for me", k, nostr.Tag{"d", "x"}, nostr.Tag{"u", strings.Replace(f.URL, "http://", "HTTP://", 1)}))
	// Not reviews of this mint: another kind of k, another mint, the operator's own.
	e.save(signed(t, dave, 38000, base, "[1/5]", nostr.Tag{"k", "38173"}, nostr.Tag{"d", pk1}, nostr.Tag{"u", f.URL}))
	e.save(signed(t, dave, 38000, base, "[1/5]", k, nostr.Tag{"d", pk2}, nostr.Tag{"u", "https://other.example"}))
	e.save(signed(t, op, 38000, base, "[5/5] my own mint is the best", k, nostr.Tag{"d", pk1}))

	reviews, sum, err := e.dir.Reviews(e.ctx, m, time.Time{}, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(reviews) != 3 || sum.Count != 3 || sum.RatedCount != 2 || sum.AverageRating == nil || *sum.AverageRating != 4.5 {
		t.Fatalf("%d reviews, summary %+v", len(reviews), sum)
	}
	carolPub, _ := nostr.GetPublicKey(carol)
	if r := reviews[0]; r.PubKey != carolPub || r.Rating != nil || r.Content != "works for me" {
		t.Fatalf("newest: %+v", r)
	}
	if r := reviews[1]; *r.Rating != 4 || r.Content != "fine" {
		t.Fatalf("bob: %+v", r)
	}
	if r := reviews[2]; *r.Rating != 5 || r.Content != "great now" || !r.CreatedAt.Equal(base.Add(time.Hour)) {
		t.Fatalf("alice: %+v", r)
	}
	// Paging.
	page, sum2, _ := e.dir.Reviews(e.ctx, m, base.Add(3*time.Hour), 1)
	if len(page) != 1 || page[0].Content != "fine" || sum2 != sum && *sum2.AverageRating != *sum.AverageRating {
		t.Fatalf("page: %+v", page)
	}
	// The saved reviews refreshed the mint's summary.
	if m = e.mint(m.ID.String()); m.Summary.Reviews.RatedCount != 2 || m.Summary.Trust.Breakdown.Reviews.RatedCount != 2 {
		t.Fatalf("summary: %+v", m.Summary.Reviews)
	}
}

func TestRejectInvalidNIP87(t *testing.T) {
	t.Parallel()
	sk := nostr.GeneratePrivateKey()
	k := nostr.Tag{"k", "38172"}
	now := time.Now()
	tests := []struct {
		ev   *nostr.Event
		want string // "" accepted
	}{
		{signed(t, sk, 38000, now, "ok", k, nostr.Tag{"d", pk1}, nostr.Tag{"u", "https://mint.example"}, nostr.Tag{"rating", "5"}), ""},
		{signed(t, sk, 38000, now, "by pubkey", k, nostr.Tag{"d", pk1}), ""},
		{signed(t, sk, 38000, now, "fedimint", nostr.Tag{"k", "38173"}, nostr.Tag{"u", "fed11abc"}), ""},
		{signed(t, sk, 1, now, "note", nostr.Tag{"rating", "11"}), ""},
		{signed(t, sk, 38000, now, "bad rating", k, nostr.Tag{"d", pk1}, nostr.Tag{"rating", "6"}), "rating"},
		{signed(t, sk, 38000, now, "bad rating", k, nostr.Tag{"d", pk1}, nostr.Tag{"rating", "4.5"}), "rating"},
		{signed(t, sk, 38000, now, "two", k, nostr.Tag{"d", pk1}, nostr.Tag{"rating", "4"}, nostr.Tag{"rating", "5"}), "at most one"},
		{signed(t, sk, 38000, now, "bad url", k, nostr.Tag{"d", pk1}, nostr.Tag{"u", "ftp://x"}), "u tag"},
		{signed(t, sk, 38000, now, "no target", k, nostr.Tag{"d", "whatever"}), "needs a u tag"},
		{signed(t, sk, 38172, now, "", nostr.Tag{"u", "https://mint.example"}), "d tag"},
		{signed(t, sk, 38172, now, "", nostr.Tag{"d", pk1}), "needs a u tag"},
		{signed(t, sk, 38172, now, "", nostr.Tag{"d", pk1}, nostr.Tag{"u", "mint.example"}), "u tag"},
		{signed(t, sk, 38172, now, "", nostr.Tag{"d", pk1}, nostr.Tag{"u", "https://mint.example"}, nostr.Tag{"nuts", "1,2,3"}), ""},
	}
	for i, tt := range tests {
		reject, msg := RejectInvalidNIP87(context.Background(), tt.ev)
		if reject != (tt.want != "") || !strings.Contains(msg, tt.want) || (reject && !strings.HasPrefix(msg, "invalid: ")) {
			t.Errorf("%d (%q): reject=%v %q, want %q", i, tt.ev.Content, reject, msg, tt.want)
		}
	}
}

func TestAnnouncementsAddMints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	f := newFakeMint(t, "Announced", pk1)
	sk := nostr.GeneratePrivateKey()
	e.save(signed(t, sk, 38172, time.Now(), "", nostr.Tag{"d", pk1}, nostr.Tag{"u", f.URL + "/"}, nostr.Tag{"u", "http://announced.onion"}, nostr.Tag{"n", "mainnet"}))
	m, err := e.dir.GetByURL(e.ctx, f.URL)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := nostr.GetPublicKey(sk)
	if m.Source != "announcement" || len(m.AnnouncedBy) != 1 || m.AnnouncedBy[0] != pub {
		t.Fatalf("announced mint: %+v", m)
	}
	if n, _ := e.dir.Count(); n != 1 {
		t.Fatalf("%d mints: the .onion URL was added", n)
	}
}

func TestAnnouncementsAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	sk := nostr.GeneratePrivateKey()
	var tags []nostr.Tag
	for i := range 8 {
		tags = append(tags, nostr.Tag{"u", "http://127.0.0.1:" + itoa(20000+i)})
	}
	e.save(signed(t, sk, 38172, time.Now(), "", append([]nostr.Tag{{"d", pk1}}, tags...)...))
	if n, _ := e.dir.Count(); n != announcedURLsPerEvent {
		t.Fatalf("%d mints from one announcement, want %d", n, announcedURLsPerEvent)
	}
	// Each announcement is a newer version of the same address (kind 38172,
	// d=pk1), so that the store keeps it and the relay runs the hook.
	at := time.Now()
	for i := range 30 {
		at = at.Add(time.Second)
		e.save(signed(t, sk, 38172, at, "", nostr.Tag{"d", pk1}, nostr.Tag{"u", "http://127.0.0.1:" + itoa(21000+i)}))
	}
	if n, _ := e.dir.Count(); n != announcedMintsPerHour {
		t.Fatalf("%d mints from one author within the hour, want %d", n, announcedMintsPerHour)
	}
	e.clock.Add(time.Hour)
	e.save(signed(t, sk, 38172, at.Add(time.Second), "", nostr.Tag{"d", pk1}, nostr.Tag{"u", "http://127.0.0.1:22000"}))
	if n, _ := e.dir.Count(); n != announcedMintsPerHour+1 {
		t.Fatalf("an hour later: %d mints", n)
	}
}

// An announced URL that can be no mint's (an IPv6 zone, port 0, a port above
// 65535) is refused by the relay's policy, and should such an event be
// stored anyway (it was accepted before the policy knew), the queued work
// skips the URL instead of panicking.
func TestAnnouncedURLsThatCannotBeMints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	sk := nostr.GeneratePrivateKey()
	for i, u := range []string{"http://[fe80::1%25eth0]/", "http://[::1%25lo]:9", "http://127.0.0.1:0", "http://127.0.0.1:99999"} {
		ev := signed(t, sk, KindCashuAnnouncement, time.Now().Add(time.Duration(i)*time.Second), "", nostr.Tag{"d", pk1}, nostr.Tag{"u", u})
		if reject, msg := RejectInvalidNIP87(e.ctx, ev); !reject || !strings.Contains(msg, "u tag") {
			t.Errorf("%s: reject=%v %q, want the u tag refused", u, reject, msg)
		}
		e.dir.OnEventSaved(e.ctx, ev)
		for len(e.dir.work) > 0 {
			(<-e.dir.work)(e.ctx)
		}
	}
	if n, _ := e.dir.Count(); n != 0 {
		t.Fatalf("%d mints added from URLs that are no mint's", n)
	}
}
