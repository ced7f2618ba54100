package wot_test

import (
	"fmt"
	"testing"

	"github.com/outpost-relay/outpost/internal/testkit/wottest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// sybilSpec is the graph of "How it is shown", scaled to a test: an honest
// population with Zipf follow counts and a sybil region of 10,000 keys
// behind attack edges.
func sybilSpec(attackEdges int) wottest.Spec {
	return wottest.Spec{
		Seed: 1, Honest: 20_000, Seeds: 3, MinFollows: 5, MaxExtra: 2_000, SeedFollows: 150,
		Sybils: 10_000, SybilFollows: 100, AttackEdges: attackEdges,
	}
}

// build loads g into a web of trust on default settings and ranks it.
func build(t testing.TB, g *wottest.Graph) *wot.WoT {
	t.Helper()
	cfg := wot.DefaultSettings()
	for _, s := range g.Seeds {
		cfg.Seeds = append(cfg.Seeds, fmt.Sprintf("%x", s[:]))
	}
	w := newWoT(t, cfg)
	for i := 0; i < len(g.Lists); i += 5_000 {
		if err := w.SetLists(g.Lists[i:min(i+5_000, len(g.Lists))]); err != nil {
			t.Fatal(err)
		}
	}
	w.Rerank()
	return w
}

// On default settings no sybil is a member except possibly the attack
// edges' own targets, while ≥ 95% of the honest keys within the depth are.
func TestSybilsStayOut(t *testing.T) {
	g := wottest.Generate(sybilSpec(10))
	w := build(t, g)
	targets := map[wot.Key]bool{}
	for _, k := range g.Targets {
		targets[k] = true
	}
	for _, k := range g.Sybils {
		if st := w.Standing(k); st.Member && !targets[k] {
			t.Fatalf("sybil %x is a member: %+v", k[:4], st)
		}
	}
	entries := 0
	for k := range targets {
		if w.Standing(k).Member {
			entries++
		}
	}
	t.Logf("attack edges' targets that are members: %d of %d", entries, len(targets))
	within, members := 0, 0
	for _, k := range g.Honest {
		st := w.Standing(k)
		if st.Hops >= 0 {
			within++
		}
		if st.Member {
			members++
		}
	}
	share := float64(members) / float64(within)
	t.Logf("honest keys within depth %d: %d of %d, members %d (%.1f%%)", wot.DefaultSettings().Depth, within, len(g.Honest), members, 100*share)
	if share < 0.95 {
		t.Errorf("%.1f%% of the honest keys within the depth are members, want ≥ 95%%", 100*share)
	}
}

// The sybil region's share of the rank is bounded by what its attack edges
// carry, damping × the attacker's rank / its follow count each, divided by
// 1 − damping (compute.go), whatever the region's size: reported for 1, 10
// and 100 attack edges.
func TestSybilRankShare(t *testing.T) {
	for _, edges := range []int{1, 10, 100} {
		spec := sybilSpec(edges)
		spec.Honest, spec.SybilFollows = 5_000, 20 // the bound holds at any size; a smaller graph is a faster test
		g := wottest.Generate(spec)
		w := build(t, g)
		sybil, bound := 0.0, 0.0
		for _, k := range g.Sybils {
			sybil += w.Standing(k).Rank
		}
		for _, a := range g.Attackers {
			bound += 0.85 * w.Standing(a).Rank / float64(followCount(g, a)) / (1 - 0.85)
		}
		t.Logf("attack edges %3d: the sybil region holds %.4f%% of the rank (bound %.4f%%)", edges, 100*sybil, 100*bound)
		if sybil > bound*1.01+1e-6 {
			t.Errorf("attack edges %d: sybils hold %.6f of the rank, more than their edges carry, %.6f", edges, sybil, bound)
		}
	}
}

// followCount is the size of a's list, its keys counted once.
func followCount(g *wottest.Graph, a wot.Key) int {
	for _, l := range g.Lists {
		if l.Author == a {
			seen := map[wot.Key]bool{}
			for _, f := range l.Follows {
				seen[f] = f != a
			}
			n := 0
			for _, in := range seen {
				if in {
					n++
				}
			}
			return n
		}
	}
	return 0
}
