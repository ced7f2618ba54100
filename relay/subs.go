package relay

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// sub is one REQ subscription. Until its stored events are sent it is not
// live: matching broadcasts wait in pending and follow EOSE, minus those the
// stored events already included, so every event reaches a subscription
// once, after or before EOSE but never twice. Of a replaceable or
// addressable event only the newest version of its address waits, and none
// older than the version the stored events sent: a burst of republished
// lists costs a subscription one version of each, never its connection,
// and no reader is sent a version after a newer one.
type sub struct {
	c       *conn
	id      string
	filters []*liveFilter // its filters that can match something, compiled
	values  int           // what its filters name, counted against the limits
	head    []byte        // `["EVENT","<id>",`
	ctx     context.Context
	cancel  context.CancelFunc

	mu           sync.Mutex
	live, closed bool
	pending      []pendingEvent
	pendingBytes int
	pendingAt    map[address]int // where the version of an address waits in pending
}

type pendingEvent struct {
	id [32]byte
	f  frame
	v  *version // nil: not replaceable
}

// address names a replaceable (d "") or addressable event's slot: NIP-01
// keeps one event of each.
type address struct {
	kind   int
	pubkey [32]byte
	d      string
}

// version is one event of an address.
type version struct {
	address
	id [32]byte
	at nostr.Timestamp
}

// versionOf is the address and version of an event, nil when its kind is
// neither replaceable nor addressable.
func versionOf(kind int, m Meta, d func() string) *version {
	switch {
	case nostr.IsReplaceableKind(kind):
		return &version{address{kind, m.PubKey, ""}, m.ID, m.CreatedAt}
	case nostr.IsAddressableKind(kind):
		return &version{address{kind, m.PubKey, d()}, m.ID, m.CreatedAt}
	}
	return nil
}

// newer says whether v replaces w (NIP-01: the later created_at, then the
// lower id).
func (v *version) newer(w *version) bool {
	if v.at != w.at {
		return v.at > w.at
	}
	return bytes.Compare(v.id[:], w.id[:]) < 0
}

func newSub(c *conn, id string, filters nostr.Filters, values int) *sub {
	s := &sub{c: c, id: id, values: values, head: eventHead(id)}
	s.compile(filters)
	s.ctx, s.cancel = context.WithCancel(c.ctx)
	return s
}

// compile keeps the filters that can match an event, compiled for matching.
func (s *sub) compile(filters nostr.Filters) {
	for _, f := range filters {
		if lf := compileFilter(s, f); lf != nil {
			s.filters = append(s.filters, lf)
		}
	}
}

// deliver queues a broadcast event (v its version, nil when it has none)
// for the subscription; it never waits. A client that cannot take it is
// dropped.
func (s *sub) deliver(id [32]byte, v *version, body []byte) {
	f := eventFrame(s.head, body)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
	case !s.live:
		s.hold(pendingEvent{id, f, v})
	case !s.c.out.pushLatest(f, s, v):
		s.c.drop("its outbound queue is full")
	}
}

// hold keeps p until the subscription is live, in place of an older
// version of its address. Under s.mu.
func (s *sub) hold(p pendingEvent) {
	i, replaces := -1, false
	if p.v != nil {
		i, replaces = s.pendingAt[p.v.address]
	}
	if replaces && !p.v.newer(s.pending[i].v) {
		return // a newer version waits already
	}
	size := p.f.size()
	if replaces {
		size -= s.pending[i].f.size()
	}
	if s.pendingBytes += size; s.pendingBytes > s.c.out.limit {
		s.c.drop("too many events arrived while its stored events were read")
		return
	}
	switch {
	case replaces:
		s.pending[i] = p
	case p.v != nil:
		if s.pendingAt == nil {
			s.pendingAt = map[address]int{}
		}
		s.pendingAt[p.v.address] = len(s.pending)
		fallthrough
	default:
		s.pending = append(s.pending, p)
	}
}

// goLive sends the last stored frames, EOSE and what arrived meanwhile,
// and makes the subscription live; sent holds the ids of the stored events
// sent.
func (s *sub) goLive(sent *sentIDs, last []frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	ok := s.c.out.pushAll(append(last, eoseMessage(s.id)))
	for _, p := range s.pending {
		if ok && !sent.has(p.id) && !sent.supersedes(p.v) {
			ok = s.c.out.pushLatest(p.f, s, p.v)
		}
	}
	s.pending, s.pendingBytes, s.pendingAt, s.live = nil, 0, nil, true
	if !ok {
		s.c.drop("its outbound queue is full")
	}
}

// sentIDs are the raw ids of the stored events a REQ sent. They are only
// listed until a second filter or an event that arrived meanwhile asks
// whether one was sent: most REQs have one filter and nothing arrives, and
// a set would cost a map grown to the limit on every one of them.
type sentIDs struct {
	list     [][32]byte
	set      map[[32]byte]struct{}
	versions map[address]*version // of the replaceable and addressable events sent
}

// addVersion notes the version of a stored event sent, if it has one.
func (s *sentIDs) addVersion(v *version) {
	if v == nil {
		return
	}
	if s.versions == nil {
		s.versions = map[address]*version{}
	}
	s.versions[v.address] = v
}

// supersedes says whether a version of v's address as new as v or newer
// was sent (v nil: it has no address).
func (s *sentIDs) supersedes(v *version) bool {
	if v == nil {
		return false
	}
	w, ok := s.versions[v.address]
	return ok && !v.newer(w)
}

func (s *sentIDs) add(id [32]byte) {
	s.list = append(s.list, id)
	if s.set != nil {
		s.set[id] = struct{}{}
	}
}

func (s *sentIDs) has(id [32]byte) bool {
	if s.set == nil {
		s.set = make(map[[32]byte]struct{}, len(s.list))
		for _, id := range s.list {
			s.set[id] = struct{}{}
		}
	}
	_, ok := s.set[id]
	return ok
}

// close ends the subscription: no more events, and its stored-event query stops.
func (s *sub) close() {
	s.cancel()
	s.mu.Lock()
	s.closed, s.pending, s.pendingAt = true, nil, nil
	s.mu.Unlock()
}

// registry holds every live or starting subscription of every connection,
// its filters indexed by what they name: a broadcast looks up the event's
// id, pubkey, kind and tag values and checks only the filters found there
// (and those naming none of these), so publishing costs what matches, not
// what is held. Broadcasts read it under its read lock while REQ, CLOSE and disconnects change it
// under the write lock.
type registry struct {
	mu      sync.RWMutex
	subs    map[*sub]struct{}
	ids     buckets[[32]byte]
	authors buckets[[32]byte]
	kinds   buckets[int]
	tags    buckets[tagValue]
	rest    map[*liveFilter]struct{} // filters naming no id, author, kind or tag
	// restPeak is rest's largest size since it was last rebuilt.
	restPeak int
}

// tagValue is a tag's name and value, as an event has it and a filter names it.
type tagValue struct{ name, value string }

func newRegistry() *registry {
	return &registry{subs: map[*sub]struct{}{}, ids: newBuckets[[32]byte](), authors: newBuckets[[32]byte](),
		kinds: newBuckets[int](), tags: newBuckets[tagValue](), rest: map[*liveFilter]struct{}{}}
}

func (g *registry) add(s *sub) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subs[s] = struct{}{}
	for _, f := range s.filters {
		g.index(f, true)
	}
}

// index files f under the field it is indexed by, or, with in false, takes
// it out: add and remove walk the same way.
func (g *registry) index(f *liveFilter, in bool) {
	switch f.by {
	case byID:
		g.ids.fileAll(f.hexKeys, f, in)
	case byAuthor:
		g.authors.fileAll(f.hexKeys, f, in)
	case byKind:
		g.kinds.fileAll(f.kindKeys, f, in)
	case byTag:
		for _, v := range f.tagKeys {
			g.tags.file(tagValue{f.tagName, v}, f, in)
		}
	default:
		if !in {
			delete(g.rest, f)
			return
		}
		g.rest[f] = struct{}{}
		g.restPeak = max(g.restPeak, len(g.rest))
	}
}

func (g *registry) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.subs)
}

// remove takes s out; removing it again does nothing.
func (g *registry) remove(s *sub) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.subs[s]; !ok {
		return
	}
	delete(g.subs, s)
	for _, f := range s.filters {
		g.index(f, false)
	}
	if g.restPeak >= 1024 && len(g.rest) < g.restPeak/8 {
		g.rest, g.restPeak = shrunk(g.rest), len(g.rest)
	}
}

// broadcast delivers ev (whose raw id and pubkey m has, JSON body) to
// every subscription with a matching filter, once.
func (g *registry) broadcast(ev *nostr.Event, m Meta, body []byte) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	v := versionOf(ev.Kind, m, ev.Tags.GetD)
	g.match(ev, m, func(s *sub) { s.deliver(m.ID, v, body) })
}

// match calls reach once for every subscription with a filter matching ev;
// under the read lock.
func (g *registry) match(ev *nostr.Event, m Meta, reach func(*sub)) {
	b := matching{ev: ev, m: m, reach: reach}
	b.offer(g.ids.get(m.ID))
	b.offer(g.authors.get(m.PubKey))
	b.offer(g.kinds.get(ev.Kind))
	var tags valueSet[tagValue] // an event may repeat a tag
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		if k := (tagValue{t[0], t[1]}); g.tags.has(k) && tags.add(k) {
			b.offer(g.tags.get(k))
		}
	}
	for f := range g.rest {
		b.check(f)
	}
}

// matching is one event's progress through the index: the subscriptions
// it reached.
type matching struct {
	ev      *nostr.Event
	m       Meta
	reach   func(*sub)
	reached valueSet[*sub]
}

func (b *matching) offer(fs []*liveFilter) {
	for _, f := range fs {
		b.check(f)
	}
}

func (b *matching) check(f *liveFilter) {
	if !b.reached.has(f.s) && f.matches(b.ev, b.m.ID, b.m.PubKey) {
		b.reached.add(f.s)
		b.reach(f.s)
	}
}

// buckets index filters by one field's values. Go maps never shrink, so
// one that a crowd of filters grew is rebuilt once they are mostly gone.
type buckets[K comparable] struct {
	m    map[K][]*liveFilter
	peak int
}

func newBuckets[K comparable]() buckets[K] { return buckets[K]{m: map[K][]*liveFilter{}} }

func (b *buckets[K]) get(k K) []*liveFilter { return b.m[k] }

func (b *buckets[K]) has(k K) bool {
	_, ok := b.m[k]
	return ok
}

func (b *buckets[K]) add(k K, f *liveFilter) {
	b.m[k] = append(b.m[k], f)
	b.peak = max(b.peak, len(b.m))
}

// file adds f to k's bucket, or, with in false, takes it out.
func (b *buckets[K]) file(k K, f *liveFilter, in bool) {
	if in {
		b.add(k, f)
	} else {
		b.remove(k, f)
	}
}

func (b *buckets[K]) fileAll(keys []K, f *liveFilter, in bool) {
	for _, k := range keys {
		b.file(k, f, in)
	}
}

// remove takes f out of k's bucket: a scan of the filters naming k, which
// a broadcast of an event with k walks anyway.
func (b *buckets[K]) remove(k K, f *liveFilter) {
	fs := b.m[k]
	i := slices.Index(fs, f)
	if i < 0 {
		return
	}
	last := len(fs) - 1
	fs[i], fs[last] = fs[last], nil
	if last == 0 {
		delete(b.m, k)
	} else {
		b.m[k] = fs[:last]
	}
	if b.peak >= 1024 && len(b.m) < b.peak/8 {
		b.m, b.peak = shrunk(b.m), len(b.m)
	}
}

// shrunk copies m into a map of its size (maps.Clone would keep m's).
func shrunk[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
