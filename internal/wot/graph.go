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
	out  [][]uint32 // the ids a key follows, sorted; nil: no contact list
	at   []uint32   // the created_at of the list in out, to keep the newest
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
	g.out[a], g.at[a] = ids, at
	if len(ids) == 0 {
		g.out[a] = []uint32{} // a list, empty: not "no list"
	}
	return !slices.Equal(old, ids) || old == nil
}

// edges counts the follows held.
func (g *graph) edges() int {
	n := 0
	for _, o := range g.out {
		n += len(o)
	}
	return n
}
