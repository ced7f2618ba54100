package mintdir

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/wottest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// saveReview stores a 38000 review of the mint at url by the key pk, as
// the relay would have after checking its signature (the directory reads
// reviews from the store and never checks one itself).
func (e *env) saveReview(pk wot.Key, url string, rating int, at time.Time) {
	e.t.Helper()
	e.save(review(pk, url, rating, at))
}

// storeReview stores a review without telling the directory: a test that
// stores many tells it of the last only, so the summary is computed once
// rather than once a review.
func (e *env) storeReview(pk wot.Key, url string, rating int, at time.Time) {
	e.t.Helper()
	if _, err := e.st.Events.Save(e.ctx, review(pk, url, rating, at)); err != nil {
		e.t.Fatal(err)
	}
}

func review(pk wot.Key, url string, rating int, at time.Time) *nostr.Event {
	ev := &nostr.Event{PubKey: fmt.Sprintf("%x", pk[:]), Kind: KindRecommendation, CreatedAt: nostr.Timestamp(at.Unix()),
		Content: fmt.Sprintf("[%d/5]", rating), Tags: nostr.Tags{{"k", "38172"}, {"d", pk1}, {"u", url}}}
	ev.ID = ev.GetID()
	ev.Sig = fmt.Sprintf("%0128x", 0)
	return ev
}

// With the web of trust's weights, 1,000 five-star reviews from a sybil
// region (its attack edges' targets among them) move a mint's trust score
// by at most 1 point, while five reviews from members count as they did
// without weights.
func TestSybilReviews(t *testing.T) {
	g := wottest.Generate(wottest.Spec{Seed: 2, Honest: 5_000, Seeds: 3, MinFollows: 5, MaxExtra: 2_000, SeedFollows: 150,
		Sybils: 10_000, SybilFollows: 20, AttackEdges: 10})
	cfg := wot.DefaultSettings()
	for _, s := range g.Seeds {
		cfg.Seeds = append(cfg.Seeds, fmt.Sprintf("%x", s[:]))
	}
	score := func(weighted bool, reviewers []wot.Key) (int, float64) {
		var c Config
		e := newEnv(t, c)
		if weighted {
			w, err := wot.New(wot.Config{Settings: cfg, DB: e.st.DB})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.SetLists(g.Lists); err != nil {
				t.Fatal(err)
			}
			w.Rerank()
			e.dir.cfg.Weight = w.Weight
		}
		f := newFakeMint(t, "Reviewed", pk1)
		id := e.submit(f.URL)
		e.probe(id)
		for i, k := range reviewers {
			rating := 3
			if i >= 5 {
				rating = 5 // the sybils'
			}
			at := e.clock.Now().Add(-time.Duration(i) * time.Second)
			if i == len(reviewers)-1 {
				e.saveReview(k, f.URL, rating, at)
			} else {
				e.storeReview(k, f.URL, rating, at)
			}
		}
		m := e.mint(id)
		return m.Summary.Trust.Score, m.Summary.Trust.Breakdown.Reviews.Score
	}
	members := fullMembers(t, g, cfg)
	before, part := score(false, members)
	weighted, wpart := score(true, members)
	if weighted != before || wpart != part {
		t.Fatalf("five members' reviews: score %d (reviews %.1f) with weights, %d (%.1f) without", weighted, wpart, before, part)
	}
	var sybils []wot.Key // the attack edges' targets first, then others, 1,000 in all
	seen := map[wot.Key]bool{}
	for _, k := range append(append([]wot.Key{}, g.Targets...), g.Sybils...) {
		if !seen[k] && len(sybils) < 1_000 {
			seen[k], sybils = true, append(sybils, k)
		}
	}
	after, apart := score(true, append(members, sybils...))
	t.Logf("trust score: %d (reviews part %.1f) with five members' reviews; %d (%.1f) with 1,000 sybil five-stars besides", weighted, wpart, after, apart)
	if math.Abs(float64(after-weighted)) > 1 || math.Abs(apart-wpart) > 1 {
		t.Fatalf("1,000 sybil reviews moved the score from %d to %d (reviews part %.1f to %.1f)", weighted, after, wpart, apart)
	}
}

// fullMembers are five honest keys that count fully.
func fullMembers(t *testing.T, g *wottest.Graph, cfg wot.Settings) []wot.Key {
	t.Helper()
	e := newEnv(t, Config{})
	w, err := wot.New(wot.Config{Settings: cfg, DB: e.st.DB})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetLists(g.Lists); err != nil {
		t.Fatal(err)
	}
	w.Rerank()
	var out []wot.Key
	for _, k := range g.Honest[len(g.Seeds):] {
		if w.Weight(fmt.Sprintf("%x", k[:])) == 1 && len(out) < 5 {
			out = append(out, k)
		}
	}
	return out
}
