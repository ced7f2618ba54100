package policies

import "container/heap"

// banSet holds the bans compactly, for a list of millions of keys: each
// key maps to a uint32 naming its terms (reason and expiry), which a spam
// wave's bans share, so a ban costs its 32-byte key, 4 bytes and the
// map's own overhead. Temporary bans are also in a heap by expiry, so the
// count of active bans is kept without walking the list: a ban whose
// expiry is seen to pass moves to lapsed, where Changes still finds it.
type banSet struct {
	active   map[[32]byte]uint32 // bans not yet seen to lapse → terms
	lapsed   map[[32]byte]uint32 // temporary bans whose expiry passed
	expiries expiryHeap          // of temporary bans in active; may hold stale entries
	terms    termTable
}

func newBanSet(n int) banSet {
	return banSet{active: make(map[[32]byte]uint32, n), lapsed: map[[32]byte]uint32{},
		terms: termTable{index: map[banTerms]uint32{}}}
}

// banTerms are what bans share: a wave's keys have one reason and expiry.
type banTerms struct {
	reason    string
	expiresAt int64 // unix seconds; 0 = never
}

type termRec struct {
	banTerms
	msg  string // the reject message, built once so the check never allocates
	refs int
}

// termTable interns banTerms, counting the bans that use each, so terms
// no ban uses any more are freed for reuse.
type termTable struct {
	recs  []termRec
	index map[banTerms]uint32
	free  []uint32
}

func (t *termTable) add(b banTerms) uint32 {
	if i, ok := t.index[b]; ok {
		t.recs[i].refs++
		return i
	}
	msg := "blocked: you are banned from this relay"
	if b.reason != "" {
		msg += ": " + b.reason
	}
	rec := termRec{banTerms: b, msg: msg, refs: 1}
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
		t.recs[i] = rec
	} else {
		i = uint32(len(t.recs))
		t.recs = append(t.recs, rec)
	}
	t.index[b] = i
	return i
}

func (t *termTable) release(i uint32) {
	r := &t.recs[i]
	if r.refs--; r.refs == 0 {
		delete(t.index, r.banTerms)
		*r = termRec{}
		t.free = append(t.free, i)
	}
}

func (s *banSet) entry(i uint32) banEntry {
	r := &s.terms.recs[i]
	return banEntry{reason: r.reason, expiresAt: r.expiresAt, msg: r.msg}
}

// put adds or replaces the ban of pk.
func (s *banSet) put(pk [32]byte, b banTerms) {
	s.remove(pk)
	s.active[pk] = s.terms.add(b)
	if b.expiresAt != 0 {
		heap.Push(&s.expiries, expiry{at: b.expiresAt, pk: pk})
		s.compact()
	}
}

// remove drops the ban of pk, lapsed or not.
func (s *banSet) remove(pk [32]byte) {
	for _, m := range []map[[32]byte]uint32{s.active, s.lapsed} {
		if i, ok := m[pk]; ok {
			delete(m, pk)
			s.terms.release(i)
		}
	}
}

// get is pk's ban, lapsed or not.
func (s *banSet) get(pk [32]byte) (banEntry, bool) {
	i, ok := s.active[pk]
	if !ok && len(s.lapsed) > 0 {
		i, ok = s.lapsed[pk]
	}
	if !ok {
		return banEntry{}, false
	}
	return s.entry(i), true
}

// due reports whether a ban has lapsed at now that advance has not moved.
func (s *banSet) due(now int64) bool {
	return len(s.expiries) > 0 && s.expiries[0].at <= now
}

// advance moves the bans lapsed at now to lapsed. A heap entry whose ban
// was since replaced or lifted is stale: it no longer matches, and is dropped.
func (s *banSet) advance(now int64) {
	for s.due(now) {
		e := heap.Pop(&s.expiries).(expiry)
		if i, ok := s.active[e.pk]; ok && s.terms.recs[i].expiresAt == e.at {
			delete(s.active, e.pk)
			s.lapsed[e.pk] = i
		}
	}
}

// compact drops the heap's stale entries once they outnumber the live
// ones, so re-banning a key again and again does not grow it.
func (s *banSet) compact() {
	if len(s.expiries) < 2*len(s.active)+1024 {
		return
	}
	live := s.expiries[:0]
	for _, e := range s.expiries {
		if i, ok := s.active[e.pk]; ok && s.terms.recs[i].expiresAt == e.at {
			live = append(live, e)
		}
	}
	clear(s.expiries[len(live):])
	s.expiries = live
	heap.Init(&s.expiries)
}

type expiry struct {
	at int64
	pk [32]byte
}

// expiryHeap orders temporary bans by expiry (container/heap).
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
