package wot

// unreached is the hops of a key no member's follows reach.
const unreached = 255

// levels is what the walk out from the seeds finds: for each id, its hops
// and its followers (members at a smaller distance who follow it).
type levels struct {
	hops      []uint8
	followers []uint32
	member    []bool
}

// walk goes out from the seeds level by level, to depth hops. A key at hop
// 0 or 1 is a member (a seed, or a seed follows it); further out, a key is a
// member only with at least minFollowers members at a smaller distance
// following it, and only members' follows are walked. So a sybil region
// hanging off one honest key's follow gets one follower, its entry, and no
// further: the entry is not a member (one follower), so nothing it follows
// is reached through it.
func (g *graph) walk(seeds []uint32, depth, minFollowers int) levels {
	n := len(g.keys)
	l := levels{hops: make([]uint8, n), followers: make([]uint32, n), member: make([]bool, n)}
	for i := range l.hops {
		l.hops[i] = unreached
	}
	var frontier []uint32
	for _, s := range seeds {
		if l.hops[s] != 0 {
			l.hops[s], l.member[s] = 0, true
			frontier = append(frontier, s)
		}
	}
	for d := 0; d < depth && len(frontier) > 0; d++ {
		var next []uint32
		for _, u := range frontier {
			for _, v := range g.out[u] {
				if l.hops[v] == unreached {
					l.hops[v] = uint8(d + 1)
					next = append(next, v)
				}
				if int(l.hops[v]) > d {
					l.followers[v]++
				}
			}
		}
		frontier = next[:0]
		for _, v := range next {
			if d+1 <= 1 || int(l.followers[v]) >= minFollowers {
				l.member[v] = true
				frontier = append(frontier, v)
			}
		}
	}
	return l
}

// Rank is personalised PageRank from the seeds: a walker starts at a seed,
// and at each step follows one of the current key's follows at random with
// probability damping, or jumps back to a seed (to a seed too from a key
// that follows no one). A key's rank is the share of time the walker spends
// there; ranks sum to 1.
//
// Why this one: a sybil region, however many keys it has and however
// densely they follow each other, receives rank only through its attack
// edges (honest keys following a sybil), each carrying damping × the
// follower's rank / the follower's follow count per step; once inside, the
// walker stays until it jumps back to a seed, so the region holds at most
// what those edges carry divided by (1 − damping). Making more sybil keys
// or more follows among them adds nothing: the attacker has to get honest
// keys — the ones with rank — to follow him. Counting followers has no such
// bound (a thousand sybils are a thousand followers), which is why the
// followers count only counts members at a smaller distance.
//
// rankIterations and rankTolerance bound the work: the L1 change falls by
// a factor damping per iteration, so 0.85^50 ≈ 3e-4 of the first change.
const (
	damping        = 0.85
	rankIterations = 50
	rankTolerance  = 1e-7
)

// rank computes the personalised PageRank of every id.
func (g *graph) rank(seeds []uint32) []float32 {
	n := len(g.keys)
	out := make([]float32, n)
	if len(seeds) == 0 {
		return out
	}
	r, next := make([]float64, n), make([]float64, n)
	teleport := 1.0 / float64(len(seeds))
	for _, s := range seeds {
		r[s] += teleport
	}
	for range rankIterations {
		clear(next)
		back := 1 - damping // the jump back to the seeds, of every step
		for u, ru := range r {
			if ru == 0 {
				continue
			}
			fs := g.out[u]
			if len(fs) == 0 {
				back += damping * ru // nowhere to go: back to the seeds
				continue
			}
			share := damping * ru / float64(len(fs))
			for _, v := range fs {
				next[v] += share
			}
		}
		for _, s := range seeds {
			next[s] += back * teleport
		}
		diff := 0.0
		for i := range r {
			diff += abs(next[i] - r[i])
		}
		r, next = next, r
		if diff < rankTolerance {
			break
		}
	}
	for i, v := range r {
		out[i] = float32(v)
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
