package policies

import (
	"bytes"
	"slices"
)

// keySet maps 32-byte keys to a uint32 each, in order of key, compactly:
// 36 bytes a key in sorted chunks of at most maxChunk keys, the chunks in
// order. A lookup is a binary search of the chunks' first keys and one of
// a chunk; a key is put or removed by moving the rest of its chunk, a full
// chunk split in two; and the keys are walked in order from any key on,
// with no copy or sort: a page of the list, or the bans of one prefix,
// costs its own size, not the list's. However the keys fall (a spam
// wave's are random; ground or made-up ones may share long prefixes), no
// chunk holds more than maxChunk.
type keySet struct {
	chunks [][]slot // each non-empty, sorted, and before the next
	n      int
}

type slot struct {
	k [32]byte
	v uint32
}

// maxChunk bounds the keys a put or remove moves (9 KB).
const maxChunk = 256

func cmpSlot(s slot, k [32]byte) int { return bytes.Compare(s.k[:], k[:]) }

func (s *keySet) len() int { return s.n }

// chunkFor is the chunk that holds k, or where k goes: the last whose first
// key is at most k, or the first.
func (s *keySet) chunkFor(k [32]byte) int {
	i, found := slices.BinarySearchFunc(s.chunks, k, func(c []slot, k [32]byte) int { return cmpSlot(c[0], k) })
	if !found && i > 0 {
		i--
	}
	return i
}

// find is where k is or goes: its chunk, its index there, and whether it is there.
func (s *keySet) find(k [32]byte) (ci, i int, ok bool) {
	if len(s.chunks) == 0 {
		return 0, 0, false
	}
	ci = s.chunkFor(k)
	i, ok = slices.BinarySearchFunc(s.chunks[ci], k, cmpSlot)
	return ci, i, ok
}

// get is k's value.
func (s *keySet) get(k [32]byte) (uint32, bool) {
	ci, i, ok := s.find(k)
	if !ok {
		return 0, false
	}
	return s.chunks[ci][i].v, true
}

// set puts or replaces k's value.
func (s *keySet) set(k [32]byte, v uint32) {
	ci, i, ok := s.find(k)
	if ok {
		s.chunks[ci][i].v = v
		return
	}
	s.n++
	if len(s.chunks) == 0 {
		s.chunks = [][]slot{{{k, v}}}
		return
	}
	if len(s.chunks[ci]) == maxChunk && ci == len(s.chunks)-1 && i == maxChunk {
		// After every key, as a list taken in key order comes: a new
		// chunk, the full one left full. Split in halves, every chunk of
		// such a list stayed half full (45 bytes a key, not 36).
		c := make([]slot, 1, maxChunk/4)
		c[0] = slot{k, v}
		s.chunks = append(s.chunks, c)
		return
	}
	if len(s.chunks[ci]) == maxChunk {
		c := s.chunks[ci]
		left, right := grown(c[:maxChunk/2], 0), grown(c[maxChunk/2:], 0)
		s.chunks[ci] = left
		s.chunks = slices.Insert(s.chunks, ci+1, right)
		if i >= len(left) {
			ci, i = ci+1, i-len(left)
		}
	}
	c := s.chunks[ci]
	if len(c) == cap(c) {
		c = grown(c, 1)
	}
	c = c[:len(c)+1]
	copy(c[i+1:], c[i:])
	c[i] = slot{k, v}
	s.chunks[ci] = c
}

// grown is a copy of c with room for more: a quarter more, not double as
// append would, since the chunks are most of the list's memory.
func grown(c []slot, more int) []slot {
	n := len(c) + more
	out := make([]slot, len(c), min(maxChunk, n+n/4+1))
	copy(out, c)
	return out
}

// remove drops k, returning its value.
func (s *keySet) remove(k [32]byte) (uint32, bool) {
	ci, i, ok := s.find(k)
	if !ok {
		return 0, false
	}
	c := s.chunks[ci]
	v := c[i].v
	if c = slices.Delete(c, i, i+1); len(c) == 0 {
		s.chunks = slices.Delete(s.chunks, ci, ci+1)
	} else {
		s.chunks[ci] = c
	}
	s.n--
	return v, true
}

// ascend calls f with each key from the first after `after` (with
// inclusive, from `after` itself) in order, until f returns false. f may
// change the value it is given (through v), nothing else.
func (s *keySet) ascend(after [32]byte, inclusive bool, f func(k *[32]byte, v *uint32) bool) {
	ci, i, found := s.find(after)
	if found && !inclusive {
		i++
	}
	for ; ci < len(s.chunks); ci, i = ci+1, 0 {
		c := s.chunks[ci]
		for ; i < len(c); i++ {
			if !f(&c[i].k, &c[i].v) {
				return
			}
		}
	}
}

// all calls f with every key in order (ascend from the first).
func (s *keySet) all(f func(k *[32]byte, v *uint32) bool) {
	s.ascend([32]byte{}, true, f)
}
