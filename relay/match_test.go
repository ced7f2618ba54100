package relay

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// gen makes filters and events from small pools of values, so that they
// often meet.
type gen struct {
	r                 *rand.Rand
	hexes, tagValues  []string
	tagNames, strange []string
}

func newGen(seed uint64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, 1)), tagNames: []string{"e", "p", "t", "emoji"},
		// Values no event has, as ids or authors: not hex, upper case, short.
		strange: []string{"xyz", strings.Repeat("A", 64), "abcd"}}
	for i := range 12 {
		g.hexes = append(g.hexes, fmt.Sprintf("%064x", i*7919+1))
	}
	g.tagValues = append([]string{"", "a", "b", "nostr"}, g.hexes[:8]...)
	return g
}

func (g *gen) pick(pool []string) string { return pool[g.r.IntN(len(pool))] }

// values is nil, empty or up to 20 values drawn from pool (repeats included:
// more than the sets' list form holds).
func (g *gen) values(pool []string) []string {
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		return nil
	case 4:
		if g.r.IntN(4) == 0 {
			return []string{}
		}
	}
	n := 1 + g.r.IntN(3)
	if g.r.IntN(4) == 0 {
		n = 1 + g.r.IntN(20)
	}
	vs := make([]string, n)
	for i := range vs {
		vs[i] = g.pick(pool)
	}
	return vs
}

func (g *gen) filter() nostr.Filter {
	f := nostr.Filter{IDs: g.values(append(g.hexes, g.strange...)), Authors: g.values(append(g.hexes, g.strange...))}
	if ks := g.values([]string{"0", "1", "7", "30023", "-1", "70000"}); ks != nil {
		f.Kinds = []int{}
		for _, k := range ks {
			var n int
			fmt.Sscan(k, &n)
			f.Kinds = append(f.Kinds, n)
		}
	}
	f.Tags = nostr.TagMap{}
	for range g.r.IntN(3) {
		name := g.pick(g.tagNames)
		f.Tags[name] = g.values(g.tagValues)
		if g.r.IntN(8) == 0 {
			f.Tags[name] = nil // no condition at all
		}
	}
	if g.r.IntN(3) == 0 {
		ts := nostr.Timestamp(g.r.IntN(100))
		f.Since = &ts
	}
	if g.r.IntN(3) == 0 {
		ts := nostr.Timestamp(g.r.IntN(100))
		f.Until = &ts
	}
	if g.r.IntN(5) == 0 {
		f.Limit, f.LimitZero = 0, true // limits don't concern live events
	}
	return f
}

func (g *gen) event() *nostr.Event {
	ev := &nostr.Event{ID: g.pick(g.hexes), PubKey: g.pick(g.hexes), Kind: []int{0, 1, 7, 30023}[g.r.IntN(4)],
		CreatedAt: nostr.Timestamp(g.r.IntN(100))}
	for range g.r.IntN(6) {
		t := nostr.Tag{g.pick(g.tagNames), g.pick(g.tagValues)}
		switch g.r.IntN(6) {
		case 0:
			t = t[:1]
		case 1:
			t = append(t, "wss://relay")
		}
		ev.Tags = append(ev.Tags, t)
	}
	return ev
}

// The index with its candidate checks reaches exactly the subscriptions
// whose filters nostr.Filter.Matches accepts, each once; subscriptions
// taken out leave nothing behind.
func TestIndexedMatchingAgreesWithFilterMatches(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for round := range 200 {
		g := newGen(seed + uint64(round))
		reg := newRegistry()
		var subs []*sub
		filters := map[*sub]nostr.Filters{}
		for i := range 1 + g.r.IntN(40) {
			fs := make(nostr.Filters, 1+g.r.IntN(3))
			for j := range fs {
				fs[j] = g.filter()
			}
			s := &sub{id: fmt.Sprint(i)}
			s.compile(fs)
			reg.add(s)
			subs, filters[s] = append(subs, s), fs
		}
		for len(subs) > 0 {
			for range 20 {
				ev := g.event()
				got := map[*sub]int{}
				reg.match(ev, metaOf(ev), func(s *sub) { got[s]++ })
				for _, s := range subs {
					if want := filters[s].Match(ev); (got[s] > 0) != want || got[s] > 1 {
						t.Fatalf("round %d: event %s\nfilters %s\nMatches %v, the index reached it %d times", round, ev, filters[s], want, got[s])
					}
				}
				if len(got) > len(subs) {
					t.Fatalf("round %d: reached %d subscriptions, %d are open", round, len(got), len(subs))
				}
			}
			// Take some out, one of them twice.
			for range 1 + g.r.IntN(len(subs)) {
				i := g.r.IntN(len(subs))
				reg.remove(subs[i])
				reg.remove(subs[i])
				subs = append(subs[:i], subs[i+1:]...)
			}
		}
		if n := reg.held(); n != 0 {
			t.Fatalf("round %d: every subscription removed, %d index entries left", round, n)
		}
	}
}

// held counts the registry's subscriptions and index entries.
func (g *registry) held() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.subs) + len(g.ids.m) + len(g.authors.m) + len(g.kinds.m) + len(g.tags.m) + len(g.rest)
}

// A filter is indexed under one field, its most selective.
func TestFilterIndexedUnderOneField(t *testing.T) {
	t.Parallel()
	hex := func(i int) string { return fmt.Sprintf("%064x", i) }
	many := func(n int) []string {
		var vs []string
		for i := range n {
			vs = append(vs, hex(100+i))
		}
		return vs
	}
	for i, c := range []struct {
		f    nostr.Filter
		want field
		keys int
	}{
		{nostr.Filter{IDs: []string{hex(1)}, Authors: []string{hex(2)}, Kinds: []int{1}}, byID, 1},
		{nostr.Filter{Authors: many(3), Tags: nostr.TagMap{"p": many(2)}}, byTag, 2},
		{nostr.Filter{Authors: many(2), Tags: nostr.TagMap{"p": many(2)}}, byAuthor, 2},
		{nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"e": many(190), "t": []string{"a", "b"}}}, byTag, 2},
		{nostr.Filter{Kinds: []int{1, 7, 1}}, byKind, 2},
		{nostr.Filter{Tags: nostr.TagMap{"e": nil}}, byNothing, 0},
		{nostr.Filter{}, byNothing, 0},
	} {
		f := compileFilter(&sub{}, c.f)
		if keys := len(f.hexKeys) + len(f.kindKeys) + len(f.tagKeys); f.by != c.want || keys != c.keys {
			t.Errorf("filter %d: indexed by %d under %d values, want %d under %d", i, f.by, keys, c.want, c.keys)
		}
		// The index's keys replace the indexed field's set, which must not
		// stay reachable (as behind the tag conditions' slice).
		if f.ids != nil || (f.by == byAuthor && f.authors != nil) || (f.by == byKind && f.kinds != nil) {
			t.Errorf("filter %d: the set of the indexed field is kept", i)
		}
		for _, tc := range f.tags[len(f.tags):cap(f.tags)] {
			if tc.values != nil {
				t.Errorf("filter %d: the indexed tag condition is kept behind the others", i)
			}
		}
	}
	for _, f := range []nostr.Filter{{IDs: []string{"xyz"}}, {Authors: []string{}}, {Kinds: []int{70000}}, {Tags: nostr.TagMap{"e": {}}}} {
		if compileFilter(&sub{}, f) != nil {
			t.Errorf("%s can match nothing but is kept", f)
		}
	}
}
