package policies

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"testing"
)

// TestPagesInOrder: the list is read in pages of key order with no copy of
// the whole: every active ban once, lapsed ones left out, a page's next
// naming where the next page starts and none after the last.
func TestPagesInOrder(t *testing.T) {
	l := NewBanList()
	var want []string
	for range 3000 {
		var b [32]byte
		rand.Read(b[:])
		k := hex.EncodeToString(b[:])
		exp := int64(0)
		if b[5]%10 == 0 {
			exp = 100 // lapsed by now = 200
		} else {
			want = append(want, k)
		}
		l.Ban(Ban{PubKey: k, Reason: "wave", ExpiresAt: exp})
	}
	slices.Sort(want)
	var got []string
	after, pages := "", 0
	for {
		bans, next := l.Page(after, 128, 200)
		pages++
		for _, b := range bans {
			got = append(got, b.PubKey)
		}
		if next == "" {
			break
		}
		if next != bans[len(bans)-1].PubKey {
			t.Fatalf("next %s is not the page's last key", next)
		}
		after = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged %d keys, want %d in order", len(got), len(want))
	}
	if wantPages := (len(want) + 127) / 128; pages != wantPages {
		t.Errorf("%d pages, want %d (no empty page after the last)", pages, wantPages)
	}
	all, _ := l.Bans(200)
	if len(all) != len(want) || !slices.IsSortedFunc(all, func(a, b Ban) int { return compareHex(a.PubKey, b.PubKey) }) {
		t.Errorf("Bans: %d keys, sorted %v", len(all), slices.IsSortedFunc(all, func(a, b Ban) int { return compareHex(a.PubKey, b.PubKey) }))
	}
	var byPrefix []string
	for first := range 256 {
		bans, _ := l.BansIn(byte(first), 200)
		for _, b := range bans {
			if b.PubKey[:2] != hex.EncodeToString([]byte{byte(first)}) {
				t.Fatalf("BansIn(%02x) gave %s", first, b.PubKey)
			}
			byPrefix = append(byPrefix, b.PubKey)
		}
	}
	if !slices.Equal(byPrefix, want) {
		t.Errorf("the parts by first byte hold %d keys, want %d in order", len(byPrefix), len(want))
	}
}

func compareHex(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestChangedByPrefix: a change counts against its key's first byte only,
// so a reader of the list by parts rebuilds only the part that changed;
// replacing the whole list changes every part.
func TestChangedByPrefix(t *testing.T) {
	l := NewBanList()
	var before, after [256]uint64
	l.Changed(&before)
	k := "ab" + pk(1)[2:]
	l.Ban(Ban{PubKey: k, Reason: "x"})
	l.Ban(Ban{PubKey: k, Reason: "x"}) // as held: no change
	l.Changed(&after)
	for i := range after {
		if d := after[i] - before[i]; (i == 0xab) != (d == 1) {
			t.Errorf("part %02x changed %d times", i, d)
		}
	}
	before = after
	l.Unban(k)
	l.Changed(&after)
	if after[0xab] == before[0xab] {
		t.Error("an unban is no change")
	}
	before = after
	l.SetBans(nil)
	l.Changed(&after)
	for i := range after {
		if after[i] <= before[i] {
			t.Fatalf("SetBans left part %02x unchanged", i)
		}
	}
	l.Ban(Ban{PubKey: "cd" + pk(2)[2:], Reason: "x", ExpiresAt: 100})
	l.Changed(&before)
	l.ActiveBans(100) // sees it lapse
	l.Changed(&after)
	if after[0xcd] == before[0xcd] {
		t.Error("a lapse is no change")
	}
}

// TestKeySetAgreesWithAMap: puts and removes of keys that share long
// prefixes (chunks split and empty) leave the set holding what a map
// would, in order.
func TestKeySetAgreesWithAMap(t *testing.T) {
	var s keySet
	model := map[[32]byte]uint32{}
	var b [8]byte
	for i := range 20_000 {
		rand.Read(b[:])
		var k [32]byte
		k[31] = b[0] % 64 // few distinct keys: many replaced and removed
		k[30] = b[1] % 64
		if b[2]%3 == 0 {
			s.remove(k)
			delete(model, k)
		} else {
			s.set(k, uint32(i))
			model[k] = uint32(i)
		}
	}
	if s.len() != len(model) {
		t.Fatalf("%d keys, want %d", s.len(), len(model))
	}
	var prev *[32]byte
	n := 0
	s.all(func(k *[32]byte, v *uint32) bool {
		if prev != nil && compareHex(hex.EncodeToString(prev[:]), hex.EncodeToString(k[:])) >= 0 {
			t.Fatalf("out of order: %x then %x", *prev, *k)
		}
		if model[*k] != *v {
			t.Fatalf("%x: %d, want %d", *k, *v, model[*k])
		}
		kk := *k
		prev = &kk
		n++
		return true
	})
	for k, v := range model {
		if got, ok := s.get(k); !ok || got != v {
			t.Fatalf("get %x: %d %v, want %d", k, got, ok, v)
		}
	}
	for _, c := range s.chunks {
		if len(c) == 0 || len(c) > maxChunk {
			t.Fatalf("a chunk of %d keys", len(c))
		}
	}
}

// TestKeySetInOrderIsFull: keys put in order (a whole list taken in pages)
// leave every chunk but the last full, so the set costs its 36 bytes a key.
func TestKeySetInOrderIsFull(t *testing.T) {
	var s keySet
	const n = 10 * maxChunk
	for i := range n {
		var k [32]byte
		k[0], k[1] = byte(i>>8), byte(i)
		s.set(k, uint32(i))
	}
	slots := 0
	for i, c := range s.chunks {
		if i < len(s.chunks)-1 && len(c) != maxChunk {
			t.Fatalf("chunk %d of %d holds %d keys, want %d", i, len(s.chunks), len(c), maxChunk)
		}
		slots += cap(c)
	}
	if slots > n+maxChunk {
		t.Errorf("%d slots for %d keys", slots, n)
	}
	for i := range n {
		var k [32]byte
		k[0], k[1] = byte(i>>8), byte(i)
		if v, ok := s.get(k); !ok || v != uint32(i) {
			t.Fatalf("key %d: %d %v", i, v, ok)
		}
	}
}
