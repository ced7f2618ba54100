package events

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

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
