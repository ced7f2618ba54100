// Package wottest generates follow graphs for the web of trust's tests and
// the bench: an honest population and a sybil region, from a seed, so a
// run can be repeated.
package wottest

import (
	"math/rand/v2"
	"slices"

	"github.com/outpost-relay/outpost/internal/wot"
)

// Spec says what to generate.
type Spec struct {
	Seed   uint64 // of the random numbers: the same Spec gives the same graph
	Honest int    // honest keys, each with a contact list
	Seeds  int    // honest keys that are the web of trust's seeds
	// Follow counts are Zipf-distributed, MinFollows plus a draw up to
	// MaxExtra (most keys follow few, a few follow thousands); whom an
	// honest key follows is drawn by popularity, Zipf too, so a few keys
	// are followed by most and most by few.
	MinFollows, MaxExtra int
	SeedFollows          int // the seeds' follow count: operators follow more than most
	Sybils               int // keys of the sybil region
	// SybilFollows is how many other sybils each sybil follows (≥ Sybils−1:
	// all of them). A complete region of 10,000 is 100M follows, 400 MB of
	// graph for a test; the bounds tested do not depend on the region's
	// inner edges, only on its attack edges.
	SybilFollows int
	AttackEdges  int // honest keys (not seeds) that each follow one sybil
}

// Graph is a generated graph.
type Graph struct {
	Lists   []wot.List
	Honest  []wot.Key // Honest[:Seeds] are the seeds
	Seeds   []wot.Key
	Sybils  []wot.Key
	Targets []wot.Key // the sybils the attack edges point at
	// Attackers are the honest keys whose follows are the attack edges,
	// Attackers[i] following Targets[i].
	Attackers []wot.Key
}

// Generate makes the graph of s.
func Generate(s Spec) *Graph {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed))
	g := &Graph{Honest: keys(r, s.Honest), Sybils: keys(r, s.Sybils)}
	g.Seeds = g.Honest[:s.Seeds]
	// Popularity: the order of a random permutation, so the seeds are not
	// the most followed keys by construction.
	pop := r.Perm(s.Honest)
	zipfFollows := rand.NewZipf(r, 1.5, 2, uint64(max(s.MaxExtra, 1)))
	zipfPop := rand.NewZipf(r, 1.05, 2, uint64(s.Honest-1))
	for i, a := range g.Honest {
		n := s.MinFollows + int(zipfFollows.Uint64())
		if i < s.Seeds {
			n = s.SeedFollows
		}
		g.Lists = append(g.Lists, wot.List{Author: a, At: 1, Follows: follows(g.Honest, pop, zipfPop, n)})
	}
	for i, a := range g.Sybils {
		g.Lists = append(g.Lists, wot.List{Author: a, At: 1, Follows: sybilFollows(r, g.Sybils, i, s.SybilFollows)})
	}
	for _, i := range r.Perm(s.Honest - s.Seeds)[:s.AttackEdges] {
		l := &g.Lists[s.Seeds+i]
		t := g.Sybils[r.IntN(len(g.Sybils))]
		l.Follows = append(l.Follows, t)
		g.Targets, g.Attackers = append(g.Targets, t), append(g.Attackers, l.Author)
	}
	return g
}

func keys(r *rand.Rand, n int) []wot.Key {
	ks := make([]wot.Key, n)
	for i := range ks {
		for j := 0; j < 32; j += 8 {
			v := r.Uint64()
			for b := range 8 {
				ks[i][j+b] = byte(v >> (8 * b))
			}
		}
	}
	return ks
}

// follows draws n honest keys by popularity.
func follows(honest []wot.Key, pop []int, z *rand.Zipf, n int) []wot.Key {
	n = min(n, len(honest)-1)
	fs := make([]wot.Key, 0, n)
	for range n {
		fs = append(fs, honest[pop[z.Uint64()]])
	}
	return fs
}

// sybilFollows is n sybils other than the i-th, or all of them.
func sybilFollows(r *rand.Rand, sybils []wot.Key, i, n int) []wot.Key {
	if n >= len(sybils)-1 {
		return slices.Concat(sybils[:i], sybils[i+1:])
	}
	fs := make([]wot.Key, 0, n)
	for len(fs) < n {
		if j := r.IntN(len(sybils)); j != i {
			fs = append(fs, sybils[j])
		}
	}
	return fs
}
