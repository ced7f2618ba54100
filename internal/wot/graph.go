package wot

import (
	"encoding/binary"
	"slices"
)

// Key is a Nostr public key, the 32 bytes a npub encodes.
type Key [32]byte

// graph is the follow graph in compact form, so that 200,000 contact lists
// of ~10M follows fit in well under 256 MiB: every key that authors or
// appears in a list gets a uint32 id, and a list is a slice of ids (4 bytes
// a follow, against 32 for a key and far more for a map of structs).
//
// Ids are found through a map keyed by the first 8 bytes of the key (12
// bytes a slot instead of 36). A key whose 8-byte prefix another key took
// first goes to more, keyed by the whole key: prefixes are the attacker's to
// choose, so a collision, however rare, must cost a lookup and not a
// confusion of two keys.
type graph struct {
	idx  map[uint64]uint32
	more map[Key]uint32
	keys []Key
	out  [][]uint32 // the ids a key follows, sorted; nil: no contact list held
	at   []uint32   // the created_at of the list in out, to keep the newest
	held int        // the follows in out, all lists together
	// removed counts the follows dropped or replaced since the graph was
	// built: at most as many ids as no list names any more (compact).
	removed int
}

func newGraph() *graph { return &graph{idx: map[uint64]uint32{}, more: map[Key]uint32{}} }

func prefix(k Key) uint64 { return binary.LittleEndian.Uint64(k[:8]) }

// lookup finds k's id.
func (g *graph) lookup(k Key) (uint32, bool) {
	id, ok := g.idx[prefix(k)]
	if !ok {
		return 0, false
	}
	if g.keys[id] == k {
		return id, true
	}
	id, ok = g.more[k]
	return id, ok
}

// intern finds k's id or gives it the next one.
func (g *graph) intern(k Key) uint32 {
	if id, ok := g.lookup(k); ok {
		return id
	}
	id := uint32(len(g.keys))
	g.keys = append(g.keys, k)
	g.out = append(g.out, nil)
	g.at = append(g.at, 0)
	if _, taken := g.idx[prefix(k)]; taken {
		g.more[k] = id
	} else {
		g.idx[prefix(k)] = id
	}
	return id
}

// set replaces author's list with follows, unless the list it has is newer
// (at is the list's created_at). It reports whether it changed anything.
// The list keeps each key once and leaves out the author himself, whose
// self-follow would only feed his own rank.
func (g *graph) set(author Key, follows []Key, at uint32) bool {
	a := g.intern(author)
	if g.out[a] != nil && at < g.at[a] {
		return false
	}
	ids := make([]uint32, 0, len(follows))
	for _, f := range follows {
		if f != author {
			ids = append(ids, g.intern(f))
		}
	}
	slices.Sort(ids)
	ids = slices.Clip(slices.Compact(ids))
	old := g.out[a]
	g.held += len(ids) - len(old)
	g.removed += lost(old, ids)
	g.out[a], g.at[a] = ids, at
	if len(ids) == 0 {
		g.out[a] = []uint32{} // a list, empty: not "no list"
	}
	return !slices.Equal(old, ids) || old == nil
}

// edges counts the follows held.
func (g *graph) edges() int { return g.held }

// lost counts the ids of old not in now (sorted).
func lost(old, now []uint32) int {
	n := 0
	for _, v := range old {
		if _, found := slices.BinarySearch(now, v); !found {
			n++
		}
	}
	return n
}

// drop forgets id's list.
func (g *graph) drop(id uint32) {
	g.held -= len(g.out[id])
	g.removed += len(g.out[id])
	g.out[id], g.at[id] = nil, 0
}

// gone is the new id of a key compact let go.
const gone = ^uint32(0)

// compact is g with only the keys still used — keep's, the authors of the
// lists held and the keys they follow — so that the ids of keys no list
// names any more (a list replaced, an author gone out of reach) are freed.
// The keys keep their order, so the lists stay sorted; remap is each old
// id's new one, or gone. Nothing of g is changed: a rank computation may
// still be reading its lists.
func (g *graph) compact(keep []uint32) (c *graph, remap []uint32) {
	used := make([]bool, len(g.keys))
	for _, id := range keep {
		used[id] = true
	}
	for id, o := range g.out {
		if o != nil {
			used[id] = true
			for _, v := range o {
				used[v] = true
			}
		}
	}
	remap = make([]uint32, len(g.keys))
	c = newGraph()
	for id, u := range used {
		remap[id] = gone
		if u {
			remap[id] = c.intern(g.keys[id])
		}
	}
	for id, o := range g.out {
		if o == nil {
			continue
		}
		ids := make([]uint32, len(o))
		for i, v := range o {
			ids[i] = remap[v]
		}
		c.out[remap[id]], c.at[remap[id]] = ids, g.at[id]
		c.held += len(ids)
	}
	return c, remap
}
