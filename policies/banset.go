package policies

import "container/heap"

// banSet holds the bans compactly, for a list of millions of keys: each
// key maps to a uint32 naming its terms (reason and expiry), which a spam
// wave's bans share, so a ban costs its 32-byte key, 4 bytes and a little
// slack (keySet), in order of key. Temporary bans are also in a heap by expiry, so the
// count of active bans is kept without walking the list: a ban whose
// expiry is seen to pass moves to lapsed, where Changes still finds it.
//
// While a whole list is taken in pages (a resync), the bans it names are
// marked, in the top bit of their terms' index, so that the bans it does
// not name are found at its end and only then lifted: a ban held before
// and named again is enforced throughout, and no second set is built.
type banSet struct {
	active    keySet              // bans not yet seen to lapse → terms (| named)
	lapsed    map[[32]byte]uint32 // temporary bans whose expiry passed
	expiries  expiryHeap          // of temporary bans in active; may hold stale entries
	terms     termTable
	resyncing bool // bans put now are marked named
	// changed counts the changes of the bans of each first byte of key,
	// so a reader of the list in parts (the publisher) rebuilds only the
	// parts that changed.
	changed [256]uint64
}

// named marks a ban named by the resync under way; ref is the rest of the
// map's value, the index of its terms (far fewer than 2³¹).
const named = 1 << 31

func ref(v uint32) uint32 { return v &^ named }

func newBanSet() banSet {
	return banSet{lapsed: map[[32]byte]uint32{}, terms: termTable{index: map[banTerms]uint32{}}}
}

// touch notes a change of pk's ban.
func (s *banSet) touch(pk *[32]byte) { s.changed[pk[0]]++ }

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

func (s *banSet) entry(v uint32) banEntry {
	r := &s.terms.recs[ref(v)]
	return banEntry{reason: r.reason, expiresAt: r.expiresAt, msg: r.msg}
}

// put adds or replaces the ban of pk.
func (s *banSet) put(pk [32]byte, b banTerms) {
	var mark uint32
	if s.resyncing {
		mark = named
	}
	if v, ok := s.active.get(pk); ok && s.terms.recs[ref(v)].banTerms == b {
		s.active.set(pk, v|mark) // as held: no new terms, no new expiry
		return
	}
	s.remove(pk)
	s.active.set(pk, s.terms.add(b)|mark)
	s.touch(&pk)
	if b.expiresAt != 0 {
		heap.Push(&s.expiries, expiry{at: b.expiresAt, pk: pk})
		s.compact()
	}
}

// remove drops the ban of pk, lapsed or not.
func (s *banSet) remove(pk [32]byte) {
	if v, ok := s.active.remove(pk); ok {
		s.terms.release(ref(v))
		s.touch(&pk)
	}
	if v, ok := s.lapsed[pk]; ok {
		delete(s.lapsed, pk)
		s.terms.release(ref(v))
	}
}

// get is pk's ban, lapsed or not.
func (s *banSet) get(pk [32]byte) (banEntry, bool) {
	i, ok := s.active.get(pk)
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
		if v, ok := s.active.get(e.pk); ok && s.terms.recs[ref(v)].expiresAt == e.at {
			s.active.remove(e.pk)
			s.lapsed[e.pk] = v
			s.touch(&e.pk)
		}
	}
}

// compact drops the heap's stale entries once they outnumber the live
// ones, so re-banning a key again and again does not grow it.
func (s *banSet) compact() {
	if len(s.expiries) < 2*s.active.len()+1024 {
		return
	}
	live := s.expiries[:0]
	for _, e := range s.expiries {
		if v, ok := s.active.get(e.pk); ok && s.terms.recs[ref(v)].expiresAt == e.at {
			live = append(live, e)
		}
	}
	clear(s.expiries[len(live):])
	s.expiries = live
	heap.Init(&s.expiries)
}

// beginResync starts a resync: no ban is named by it yet (one begun before
// and never ended, its fetch failed, named some).
func (s *banSet) beginResync() {
	if s.resyncing {
		s.unmark()
	}
	s.resyncing = true
}

// keep marks pk's ban, as it is, named by the resync.
func (s *banSet) keep(pk [32]byte) {
	if v, ok := s.active.get(pk); ok && s.resyncing {
		s.active.set(pk, v|named)
	}
}

// endResync ends the resync, returning the keys of the active bans it did
// not name.
func (s *banSet) endResync() (unnamed [][32]byte) {
	s.active.all(func(pk *[32]byte, v *uint32) bool {
		if *v&named == 0 {
			unnamed = append(unnamed, *pk)
		}
		return true
	})
	s.unmark()
	s.resyncing = false
	return unnamed
}

func (s *banSet) unmark() {
	s.active.all(func(_ *[32]byte, v *uint32) bool {
		*v = ref(*v)
		return true
	})
	for pk, v := range s.lapsed {
		s.lapsed[pk] = ref(v)
	}
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
