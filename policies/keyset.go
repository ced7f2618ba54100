package policies

import (
	"bytes"
	"slices"
)

// keySet maps 32-byte keys to a uint32 each, in order of key, compactly:
// 36 bytes a key in arrays sorted by key, one for each value of the key's
// first two bytes. A lookup is a binary search of one array; a key is put
// or removed by moving the rest of its array (15 keys at a million, 150 at
// ten million); and the keys are walked in order, from any key on, with no
// copy or sort: a page of the list, or the bans of one prefix, costs its
// own size, not the list's.
type keySet struct {
	buckets [][]slot // 1<<16 of them, by the key's first two bytes; nil while empty
	n       int
}

type slot struct {
	k [32]byte
	v uint32
}

const keyBuckets = 1 << 16

func bucketOf(k *[32]byte) int { return int(k[0])<<8 | int(k[1]) }

func cmpSlot(s slot, k [32]byte) int { return bytes.Compare(s.k[:], k[:]) }

func (s *keySet) len() int { return s.n }

// get is k's value.
func (s *keySet) get(k [32]byte) (uint32, bool) {
	if s.n == 0 {
		return 0, false
	}
	b := s.buckets[bucketOf(&k)]
	if i, ok := slices.BinarySearchFunc(b, k, cmpSlot); ok {
		return b[i].v, true
	}
	return 0, false
}

// set puts or replaces k's value.
func (s *keySet) set(k [32]byte, v uint32) {
	if s.buckets == nil {
		s.buckets = make([][]slot, keyBuckets)
	}
	bi := bucketOf(&k)
	b := s.buckets[bi]
	i, ok := slices.BinarySearchFunc(b, k, cmpSlot)
	if ok {
		b[i].v = v
		return
	}
	if len(b) == cap(b) {
		// Grown by a quarter, not doubled as append would: the arrays are
		// most of the list's memory.
		nb := make([]slot, len(b), len(b)+len(b)/4+2)
		copy(nb, b)
		b = nb
	}
	b = b[:len(b)+1]
	copy(b[i+1:], b[i:])
	b[i] = slot{k, v}
	s.buckets[bi] = b
	s.n++
}

// remove drops k, returning its value.
func (s *keySet) remove(k [32]byte) (uint32, bool) {
	if s.n == 0 {
		return 0, false
	}
	bi := bucketOf(&k)
	b := s.buckets[bi]
	i, ok := slices.BinarySearchFunc(b, k, cmpSlot)
	if !ok {
		return 0, false
	}
	v := b[i].v
	b = slices.Delete(b, i, i+1)
	if len(b) == 0 {
		b = nil
	}
	s.buckets[bi] = b
	s.n--
	return v, true
}

// ascend calls f with each key from the first after `after` (with
// inclusive, from `after` itself) in order, until f returns false. f may
// change the value it is given (through v), nothing else.
func (s *keySet) ascend(after [32]byte, inclusive bool, f func(k *[32]byte, v *uint32) bool) {
	if s.n == 0 {
		return
	}
	first := bucketOf(&after)
	for bi := first; bi < keyBuckets; bi++ {
		b := s.buckets[bi]
		i := 0
		if bi == first {
			var found bool
			i, found = slices.BinarySearchFunc(b, after, cmpSlot)
			if found && !inclusive {
				i++
			}
		}
		for ; i < len(b); i++ {
			if !f(&b[i].k, &b[i].v) {
				return
			}
		}
	}
}

// all calls f with every key in order (ascend from the first).
func (s *keySet) all(f func(k *[32]byte, v *uint32) bool) {
	s.ascend([32]byte{}, true, f)
}
