package events

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/kv"
)

// maxAuthorKindScans is how many (author, kind) pairs a filter may have for
// the store to scan the author-kind index; beyond it, it scans by author and
// reads each event to check its kind. Ranges past the limit'th result are
// never opened (see newest), so a home feed's 300 follows × 2 kinds cost
// seeks only for the follows that posted lately.
const maxAuthorKindScans = 1024

// maxAddressLookups is how many addresses a filter may name for the store
// to look each one up (two point reads) rather than scan an index: a point
// read costs a fraction of an index scan's seek, which visits every level
// of badger's tree (see chooseScans).
const maxAddressLookups = 4096

// plan is how one filter is answered: which index ranges to scan (or which
// ids to look up) and which conditions to check on each candidate.
type plan struct {
	f       nostr.Filter
	none    bool     // the filter cannot match anything
	scans   [][]byte // index prefixes; every key below one ends with ts and id
	ids     [][]byte // instead of scans: the ids to look up
	addrs   [][]byte // instead of scans: the address keys to look up
	kinds   map[uint16]bool
	kindSet uint64 // bit h set for each kind whose kindMeta hash is h
	authors map[[32]byte]bool
	idSet   map[[32]byte]bool
	tags    []tagCond // tag conditions the scan does not guarantee
	verify  bool      // a tag value was hashed: compare the decoded event too
	covered bool      // the scanned ranges hold only events matching the whole filter
	dense   bool      // the scanned ranges are kinds or time: their events lie close together
	since   []byte    // encoded since: scans stop past it
	until   []byte    // encoded until: scans start there
}

// tagCond is one tag condition: the event must have a key under one of the
// prefixes (prefixTag, name, value).
type tagCond struct {
	prefixes [][]byte
}

func newPlan(f nostr.Filter) *plan {
	p := &plan{f: f}
	if f.Search != "" { // NIP-50 is not supported: nothing matches a search
		p.none = true
		return p
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		p.none = true
		return p
	}
	if f.Since != nil {
		p.since = encodeTS(nil, *f.Since)
	}
	if f.Until != nil {
		p.until = encodeTS(nil, *f.Until)
	}
	p.takeIDs()
	p.takeKinds()
	authors := p.takeAuthors()
	p.takeTags()
	if p.none || p.ids != nil {
		return p
	}
	if p.addrs = p.addresses(authors); p.addrs == nil {
		p.chooseScans(authors)
	}
	return p
}

// addresses lists the address keys of every event the filter can match,
// or nil when it cannot tell: it can when it names authors and only
// replaceable kinds (profiles, contact lists, relay lists), which the store
// keeps one of per author and kind. Reading those finds every candidate
// (the other conditions are checked on each as usual) without a scan.
// Addressable kinds are not looked up by #d: an event with two d tags
// matches either, but its address is its first.
func (p *plan) addresses(authors [][]byte) [][]byte {
	if authors == nil || p.kinds == nil || len(authors)*len(p.kinds) > maxAddressLookups {
		return nil
	}
	var keys [][]byte
	for k := range p.kinds {
		if !nostr.IsReplaceableKind(int(k)) {
			return nil
		}
		for _, a := range authors {
			keys = append(keys, addressKey(k, a, ""))
		}
	}
	return keys
}

func (p *plan) takeIDs() {
	if p.f.IDs == nil {
		return
	}
	p.idSet = map[[32]byte]bool{}
	for _, s := range p.f.IDs {
		var id [32]byte
		if parseHex32(s, &id) && !p.idSet[id] {
			p.idSet[id] = true
			p.ids = append(p.ids, id[:])
		}
	}
	p.none = p.none || len(p.ids) == 0
}

func (p *plan) takeKinds() {
	if p.f.Kinds == nil {
		return
	}
	p.kinds = map[uint16]bool{}
	for _, k := range p.f.Kinds {
		if k >= 0 && k <= 0xFFFF {
			p.kinds[uint16(k)] = true
			p.kindSet |= 1 << (kindMeta(uint16(k)) >> 2)
		}
	}
	p.none = p.none || len(p.kinds) == 0
}

// takeAuthors returns the filter's distinct valid authors as bytes.
func (p *plan) takeAuthors() (authors [][]byte) {
	if p.f.Authors == nil {
		return nil
	}
	p.authors = map[[32]byte]bool{}
	for _, s := range p.f.Authors {
		var pk [32]byte
		if parseHex32(s, &pk) && !p.authors[pk] {
			p.authors[pk] = true
			authors = append(authors, pk[:])
		}
	}
	p.none = p.none || len(authors) == 0
	return authors
}

func (p *plan) takeTags() {
	names := make([]string, 0, len(p.f.Tags))
	for name, values := range p.f.Tags {
		if values != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if len(name) != 1 { // not indexed: see the package documentation
			p.none = true
			return
		}
		var c tagCond
		seen := map[string]bool{}
		for _, v := range p.f.Tags[name] {
			k, hashed := tagKey(name[0], v)
			p.verify = p.verify || hashed
			if !seen[string(k)] {
				seen[string(k)] = true
				c.prefixes = append(c.prefixes, k)
			}
		}
		if len(c.prefixes) == 0 {
			p.none = true
			return
		}
		p.tags = append(p.tags, c)
	}
}

// chooseScans picks the index to scan. Authors first: one author's events
// are few next to a kind's or even a tag's; then the tag condition with the
// fewest values; then kinds; then time alone.
func (p *plan) chooseScans(authors [][]byte) {
	var kinds []uint16
	for k := range p.kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	switch {
	case authors != nil && kinds != nil && len(authors)*len(kinds) <= maxAuthorKindScans:
		for _, a := range authors {
			for _, k := range kinds {
				p.scans = append(p.scans, binary.BigEndian.AppendUint16(join(prefixAuthorKind, a), k))
			}
		}
		p.covered = len(p.tags) == 0
	case authors != nil:
		for _, a := range authors {
			p.scans = append(p.scans, join(prefixAuthor, a))
		}
		p.covered = len(p.tags) == 0 && kinds == nil
	case len(p.tags) > 0:
		best := 0
		for i, c := range p.tags {
			if len(c.prefixes) < len(p.tags[best].prefixes) {
				best = i
			}
		}
		p.scans = p.tags[best].prefixes
		p.tags = slices.Delete(p.tags, best, best+1)
		p.covered = len(p.tags) == 0 && kinds == nil && !p.verify
	case kinds != nil:
		for _, k := range kinds {
			p.scans = append(p.scans, binary.BigEndian.AppendUint16([]byte{prefixKind}, k))
		}
		p.covered, p.dense = true, true
	default:
		p.scans = [][]byte{{prefixEvent}}
		p.covered, p.dense = true, true
	}
}

// mayAccept is false when meta, an index key's user meta, says that the
// event's kind is none the plan asks for; true when it may be.
func (p *plan) mayAccept(meta byte) bool {
	return p.kinds == nil || meta&flagKind == 0 || p.kindSet&(1<<(meta>>2)) != 0
}

// accepts checks a candidate the plan's scan found against the rest of the
// filter. tail is its ts and id, val its stored value.
func (p *plan) accepts(txn *kv.Txn, tail, val []byte, buf *[]byte) (bool, error) {
	if p.kinds != nil && !p.kinds[binary.BigEndian.Uint16(val[1:])] {
		return false, nil
	}
	if p.authors != nil && !p.authors[[32]byte(val[19:51])] {
		return false, nil
	}
	if p.idSet != nil && !p.idSet[[32]byte(tail[8:])] {
		return false, nil
	}
	createdAt := nostr.Timestamp(binary.BigEndian.Uint64(val[3:]))
	if p.f.Since != nil && createdAt < *p.f.Since || p.f.Until != nil && createdAt > *p.f.Until {
		return false, nil
	}
	for _, c := range p.tags {
		found := false
		for _, prefix := range c.prefixes {
			*buf = append(append((*buf)[:0], prefix...), tail...)
			_, err := txn.Get(*buf)
			if err == nil {
				found = true
				break
			}
			if !errors.Is(err, kv.ErrNotFound) {
				return false, err
			}
		}
		if !found {
			return false, nil
		}
	}
	if p.verify {
		var ev nostr.Event
		if err := ev.UnmarshalJSON(val[headerLen:]); err != nil {
			return false, err
		}
		return p.f.Matches(&ev), nil
	}
	return true, nil
}

// cursor walks one index range (or a sorted list of tails), newest first.
type cursor struct {
	it     *kv.Iterator
	prefix []byte
	stop   []byte   // encoded since, or nil
	tails  [][]byte // for id lookups, instead of it
	until  []byte   // encoded until, or nil: where it starts
	plan   int
	tail   [tailLen]byte
	meta   byte // the key's user meta (flagExpires, flagKind)
	// lazy: not open yet; tail holds the range's bound (see newest) and the
	// lowest id, which sorts before every event the range can hold.
	lazy bool
}

// open starts the cursor's iterator at its first candidate; false when the
// range has none.
func (c *cursor) open(txn *kv.Txn) bool {
	c.lazy = false
	c.it = txn.NewIterator(kv.IteratorOptions{Prefix: c.prefix})
	if c.until != nil {
		c.it.Seek(append(slices.Clip(c.prefix), c.until...))
	} else {
		c.it.Seek(c.prefix)
	}
	return c.next(true)
}

// next moves to the next key in range; false when there is none.
func (c *cursor) next(first bool) bool {
	if c.it == nil {
		if !first {
			c.tails = c.tails[1:]
		}
		if len(c.tails) == 0 {
			return false
		}
		copy(c.tail[:], c.tails[0])
		c.meta = flagExpires // unknown: look
		return true
	}
	if !first {
		c.it.Next()
	}
	for ; c.it.ValidForPrefix(c.prefix); c.it.Next() {
		k := c.it.Item().Key()
		if len(k) != len(c.prefix)+tailLen {
			continue // not a key of this range (cannot happen: encodings are prefix-free)
		}
		t := k[len(c.prefix):]
		if c.stop != nil && bytes.Compare(t[:8], c.stop) > 0 {
			return false
		}
		copy(c.tail[:], t)
		c.meta = c.it.Item().Meta()
		return true
	}
	return false
}

type cursorHeap []*cursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return bytes.Compare(h[i].tail[:], h[j].tail[:]) < 0 }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// scan calls fn with each distinct live event that one of plans matches,
// newest first (ties: lowest id first), until fn returns false. It holds
// one iterator per index range, one over the events (see eventReader) and
// one event at a time. When values is
// false, fn may get a nil val: for events that a covering plan found and
// that cannot expire, it is not read.
func (s *Store) scan(ctx context.Context, txn *kv.Txn, plans []*plan, values bool, fn func(id, val []byte) bool) error {
	now := s.now().Unix()
	h, its, err := s.openCursors(txn, plans)
	defer func() {
		for _, it := range its {
			it.Close()
		}
	}()
	if err != nil {
		return err
	}
	heap.Init(&h)

	var (
		bufs    scanBufs
		matched = make([]int, 0, len(plans))
		group   []*cursor
	)
	defer bufs.events.close()
	bufs.events.lookup = !slices.ContainsFunc(plans, func(p *plan) bool { return p.dense })
	for n := 0; len(h) > 0; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if h[0].lazy { // the merge has reached its bound: open it
			ok := h[0].open(txn)
			its = append(its, h[0].it)
			if ok {
				heap.Fix(&h, 0)
			} else {
				heap.Pop(&h)
			}
			continue
		}
		// Every range that reached this event is at the same tail now.
		group = append(group[:0], heap.Pop(&h).(*cursor))
		for len(h) > 0 && h[0].tail == group[0].tail {
			group = append(group, heap.Pop(&h).(*cursor))
		}
		tail := group[0].tail
		matched = matched[:0]
		for _, c := range group {
			if !slices.Contains(matched, c.plan) {
				matched = append(matched, c.plan)
			}
		}
		more, meta := true, group[0].meta // an event's index keys share their meta
		var err error
		switch {
		case !slices.ContainsFunc(matched, func(i int) bool { return plans[i].mayAccept(meta) }):
			// of a kind no plan asks for: not read
		case !values && meta&flagExpires == 0 && slices.ContainsFunc(matched, func(i int) bool { return plans[i].covered }):
			more = fn(tail[8:], nil)
		default:
			more, err = s.visit(txn, plans, matched, tail[:], now, &bufs, fn)
		}
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		for _, c := range group {
			if c.next(false) {
				heap.Push(&h, c)
			}
		}
	}
	return nil
}

// openCursors positions one cursor per index range of the plans (one for
// all the ids of an id plan) on its first candidate. The caller closes its
// iterators, also when it returns an error.
func (s *Store) openCursors(txn *kv.Txn, plans []*plan) (h cursorHeap, its []*kv.Iterator, err error) {
	for i, p := range plans {
		if p.none {
			continue
		}
		if p.ids != nil || p.addrs != nil {
			c := &cursor{plan: i}
			if c.tails, err = p.lookUp(txn); err != nil {
				return h, its, err
			}
			slices.SortFunc(c.tails, bytes.Compare)
			if c.next(true) {
				h = append(h, c)
			}
			continue
		}
		for _, prefix := range p.scans {
			c := &cursor{prefix: prefix, stop: p.since, until: p.until, plan: i}
			if ts, ok, known := s.newest.bound(prefix); known {
				if !ok || p.f.Since != nil && ts < int64(*p.f.Since) {
					continue // nothing in range
				}
				if p.f.Until != nil {
					ts = min(ts, int64(*p.f.Until))
				}
				encodeTS(c.tail[:0], nostr.Timestamp(ts))
				c.lazy = true
				h = append(h, c)
				continue
			}
			ok := c.open(txn)
			its = append(its, c.it)
			if ok {
				h = append(h, c)
			}
		}
	}
	return h, its, nil
}

// lookUp gives the ts and id of each stored event an id plan names, from
// their id keys, or of those its address keys name.
func (p *plan) lookUp(txn *kv.Txn) ([][]byte, error) {
	var tails [][]byte
	for _, id := range p.ids {
		tail, err := findTail(txn, id)
		if err != nil {
			return nil, err
		}
		if tail != nil {
			tails = append(tails, tail)
		}
	}
	for _, k := range p.addrs {
		item, err := txn.Get(k)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		tail, err := item.ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		if len(tail) == tailLen {
			tails = append(tails, tail)
		}
	}
	return tails, nil
}

// scanBufs are a scan's buffers, reused from one candidate to the next:
// its stored value, and index keys to look up; and its reader of events.
type scanBufs struct {
	val, key []byte
	events   eventReader
}

// eventReader reads the values of a scan's events in the order the scan
// meets them, which is the order of their keys. Events are stored in time
// order, so the next one a scan of common kinds or of time alone wants is
// most often a few records on: the reader walks there with one iterator,
// where a point lookup builds an iterator of its own and seeks every table
// that may hold the key. The events of an author, a tag or an id list are
// far apart, and looked up one by one; so are a kind's, from the first
// that is further than maxSteps records on (a rare kind).
type eventReader struct {
	it     *kv.Iterator // over the event range; nil until the first walk
	key    []byte
	lookup bool // point lookups
}

// maxSteps is how many records the iterator walks to the next read.
const maxSteps = 16

// read appends the value of the event at tail to dst; found is false when
// there is no such event.
func (r *eventReader) read(txn *kv.Txn, tail, dst []byte) (val []byte, found bool, err error) {
	r.key = append(append(r.key[:0], prefixEvent), tail...)
	if r.lookup {
		val, err = txn.AppendValue(r.key, dst)
		if errors.Is(err, kv.ErrNotFound) {
			return dst, false, nil
		}
		return val, err == nil, err
	}
	prefix := r.key[:1]
	if r.it == nil {
		r.it = txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
		r.it.Seek(r.key)
	} else {
		before := func() bool { return r.it.ValidForPrefix(prefix) && bytes.Compare(r.it.Item().Key(), r.key) < 0 }
		for steps := 0; steps < maxSteps && before(); steps++ {
			r.it.Next()
		}
		if before() {
			r.lookup = true
			return r.read(txn, tail, dst)
		}
	}
	if !r.it.ValidForPrefix(prefix) || !bytes.Equal(r.it.Item().Key(), r.key) {
		return dst, false, nil
	}
	err = r.it.Item().Value(func(v []byte) error {
		val = append(dst, v...)
		return nil
	})
	return val, err == nil, err
}

// close closes the reader's iterator, if it opened one.
func (r *eventReader) close() {
	if r.it != nil {
		r.it.Close()
	}
}

// visit reads one candidate and hands it to fn when it is live and one of
// the plans that found it accepts it.
func (s *Store) visit(txn *kv.Txn, plans []*plan, found []int, tail []byte, now int64, bufs *scanBufs, fn func(id, val []byte) bool) (bool, error) {
	id := tail[8:]
	val, err := s.value(txn, tail, &bufs.val, &bufs.events)
	if val == nil || err != nil {
		return err == nil, err // no value: an index key without its event, nothing to serve
	}
	if len(val) < headerLen || val[0] != headerVersion {
		_, err := meta(id, val)
		return false, err
	}
	if exp := int64(binary.BigEndian.Uint64(val[11:])); exp != 0 && exp <= now {
		return true, nil // NIP-40: expired events are gone for readers
	}
	for _, i := range found {
		ok, err := plans[i].accepts(txn, tail, val, &bufs.key)
		if err != nil {
			return false, err
		}
		if ok {
			return fn(id, val), nil
		}
	}
	return true, nil
}

// value reads the stored value of the event at tail into *buf, from the
// cache when it is there, else with r; nil when the event is not stored.
// It may be in the cache and deleted since: the caller knows from an
// index, id or address key of its snapshot that it is stored.
func (s *Store) value(txn *kv.Txn, tail []byte, buf *[]byte, r *eventReader) ([]byte, error) {
	id := tail[8:]
	if val, ok := s.cache.get(id, (*buf)[:0]); ok {
		*buf = val
		return val, nil
	}
	val, found, err := r.read(txn, tail, (*buf)[:0])
	if !found || len(val) == 0 || err != nil {
		return nil, err // none
	}
	*buf = val
	s.cache.put(id, val)
	return val, nil
}

// Query calls yield for each stored event matching f exactly, newest first, stopping after
// f.Limit yielded events when f.Limit > 0 (0 means no limit: the caller clamps), when yield
// returns false, or when ctx ends. Events for which skip returns true are passed over and do
// not count towards the limit. raw is the event's JSON, valid only during yield.
//
// A filter with "limit":0 (LimitZero) yields nothing, one with a search
// (NIP-50) or a condition on a tag name longer than one letter matches nothing.
// Expired events (NIP-40) are never yielded. The error is ctx's when it ended.
func (s *Store) Query(ctx context.Context, f nostr.Filter, skip func(Meta) bool, yield func(m Meta, raw []byte) bool) error {
	if f.LimitZero {
		return nil
	}
	p := newPlan(f)
	if p.none {
		return nil
	}
	n := 0
	var ferr error
	err := s.db.View(func(txn *kv.Txn) error {
		return s.scan(ctx, txn, []*plan{p}, true, func(id, val []byte) bool {
			m, err := meta(id, val)
			if err != nil {
				ferr = err
				return false
			}
			if skip != nil && skip(m) {
				return true
			}
			if !yield(m, val[headerLen:]) {
				return false
			}
			n++
			return f.Limit <= 0 || n < f.Limit
		})
	})
	if err == nil {
		err = ferr
	}
	return err
}

// Count counts the distinct stored events matching any of filters, leaving out those skip drops.
// Limits are ignored; expired events are not counted.
func (s *Store) Count(ctx context.Context, filters []nostr.Filter, skip func(Meta) bool) (int64, error) {
	plans := make([]*plan, 0, len(filters))
	for _, f := range filters {
		if p := newPlan(f); !p.none {
			plans = append(plans, p)
		}
	}
	if len(plans) == 0 {
		return 0, nil
	}
	var n int64
	var ferr error
	err := s.db.View(func(txn *kv.Txn) error {
		return s.scan(ctx, txn, plans, skip != nil, func(id, val []byte) bool {
			if skip != nil {
				m, err := meta(id, val)
				if err != nil {
					ferr = err
					return false
				}
				if skip(m) {
					return true
				}
			}
			n++
			return true
		})
	})
	if err == nil {
		err = ferr
	}
	return n, err
}

// Address returns the event stored at an address: a replaceable or
// addressable kind, a pubkey and d ("" for replaceable kinds, and the address
// of an addressable event without a d tag). It is nil when there is none or
// it expired.
func (s *Store) Address(ctx context.Context, kind int, pubkey, d string) (*nostr.Event, error) {
	var pk [32]byte
	if !hasAddress(kind) || !parseHex32(pubkey, &pk) {
		return nil, nil
	}
	if !nostr.IsAddressableKind(kind) {
		d = ""
	}
	var ev *nostr.Event
	err := s.db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(addressKey(uint16(kind), pk[:], d))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		tail, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		if len(tail) != tailLen {
			return nil // damaged: see put
		}
		item, err = txn.Get(eventKey(tail))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return item.Value(func(val []byte) error {
			m, err := meta(tail[8:], val)
			if err != nil {
				return err
			}
			if m.Expiration != 0 && int64(m.Expiration) <= s.now().Unix() {
				return nil
			}
			ev = &nostr.Event{}
			return ev.UnmarshalJSON(val[headerLen:])
		})
	})
	if err == nil && ev != nil && address(ev.Kind, ev.Tags) != d {
		ev = nil // two long d values with one SHA-256: never seen, but stay exact
	}
	return ev, err
}

// queryBatch is how many decoded events QueryEvents hands over at once:
// sending them one by one, as each is read, would wake the reader for each.
const queryBatch = 32

// QueryEvents is Query for khatru's QueryEvents hook and eventstore callers:
// the events come decoded on a channel that closes at the end. Read the
// channel to its end or end ctx. f.Limit 0 means no limit.
func (s *Store) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	ch := make(chan *nostr.Event, queryBatch)
	go func() {
		defer close(ch)
		batch := make([]*nostr.Event, 0, queryBatch)
		send := func() bool {
			for _, ev := range batch {
				select {
				case ch <- ev:
				case <-ctx.Done():
					return false
				}
			}
			batch = batch[:0]
			return true
		}
		err := s.Query(ctx, f, nil, func(m Meta, raw []byte) bool {
			ev := &nostr.Event{}
			if err := ev.UnmarshalJSON(raw); err != nil {
				s.log.Error("stored event unreadable", "id", m.IDHex(), "err", err)
				return true
			}
			batch = append(batch, ev)
			return len(batch) < queryBatch || send()
		})
		if err != nil && ctx.Err() == nil {
			s.log.Error("query failed", "filter", f.String(), "err", err)
		}
		send()
	}()
	return ch, nil
}

// CountEvents is Count of one filter, for khatru's CountEvents hook.
func (s *Store) CountEvents(ctx context.Context, f nostr.Filter) (int64, error) {
	return s.Count(ctx, []nostr.Filter{f}, nil)
}
