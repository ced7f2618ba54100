package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip45"
	"github.com/nbd-wtf/go-nostr/nip45/hyperloglog"
	"github.com/tidwall/gjson"
)

// onReq handles ["REQ", <sub id>, <filter>...]: the subscription is
// registered at once (so nothing published from now on is missed), its
// stored events are sent, then EOSE and what arrived meanwhile. Its filters
// are decoded only once it is within the limits: a REQ refused for them
// costs no more than its parsing.
func (c *conn) onReq(m message) {
	start := time.Now()
	id, reason := m.subID()
	if reason != "" {
		c.refuse(m, reason, closedMessage)
		return
	}
	values := m.filterValues()
	c.mu.Lock()
	old := c.subs[id]
	reason = c.admit(old, values)
	var filters nostr.Filters
	if reason == "" {
		if filters, reason = m.filters(c.r.limits.MaxFilters); reason != "" {
			c.r.heldValues.give(c.ip, values)
		}
	}
	if reason != "" {
		c.mu.Unlock()
		c.unsubscribe(id) // a refused REQ ends a subscription it would have replaced
		c.send(closedMessage(id, reason))
		return
	}
	s := newSub(c, id, filters, values)
	if old != nil {
		c.forget(old)
	}
	c.subs[id], c.values = s, c.values+s.values
	c.mu.Unlock()
	if old != nil { // a REQ with an open subscription's id replaces it
		c.r.subs.remove(old)
		old.close()
	}
	c.r.subs.add(s)
	c.spawn(func(context.Context) {
		if c.sendStored(s, filters) {
			c.r.observer.ReqAnswered(time.Since(start))
		}
	})
}

// admit says why a subscription naming values filter values may not open
// in place of old (nil: none), if it may not: the connection would have
// too many subscriptions, or they, or the subscriptions of every
// connection from its address, would name too many filter values. When it
// may, the address's count takes values. Under c.mu.
func (c *conn) admit(old *sub, values int) string {
	l := &c.r.limits
	if max := l.MaxSubscriptions; old == nil && max > 0 && len(c.subs) >= max {
		c.r.counters.subscriptionsRefused.Add(1)
		return fmt.Sprintf("rate-limited: %d subscriptions are open, at most %d allowed; close one first", max, max)
	}
	freed := 0
	if old != nil {
		freed = old.values
	}
	if max := l.MaxFilterValues; max > 0 && values > max {
		c.r.counters.filterValuesRefused.Add(1)
		return fmt.Sprintf("invalid: the filters name %d values (ids, authors, kinds, tag values), at most %d allowed", values, max)
	}
	if max, total := l.MaxFilterValues, c.values-freed+values; max > 0 && total > max {
		c.r.counters.filterValuesRefused.Add(1)
		return fmt.Sprintf("rate-limited: this connection's subscriptions would name %d filter values, at most %d allowed; close one first", total, max)
	}
	if total, ok := c.r.heldValues.take(c.ip, values, freed, l.IPFilterValues); !ok {
		c.r.counters.filterValuesRefused.Add(1)
		return fmt.Sprintf("rate-limited: the subscriptions from your address would name %d filter values, at most %d allowed; close one first", total, l.IPFilterValues)
	}
	return ""
}

// forget takes s out of the connection's subscriptions and gives back the
// filter values it held. Under c.mu, with s in c.subs.
func (c *conn) forget(s *sub) {
	delete(c.subs, s.id)
	c.values -= s.values
	c.r.heldValues.give(c.ip, s.values)
}

// sendStored sends a subscription's stored events, each once, each frame
// the stored JSON with the subscription id spliced in, then makes it live;
// false when the subscription ended first.
func (c *conn) sendStored(s *sub, filters nostr.Filters) bool {
	var sent sentIDs
	stored := storedFrames{out: c.out, head: s.head}
	for i, f := range filters {
		q, ok := c.r.limits.query(f)
		if !ok {
			continue
		}
		err := c.r.events.Query(s.ctx, q, c.r.hiddenAt(time.Now().Unix()), func(m Meta, raw []byte) bool {
			if i > 0 && sent.has(m.ID) { // one filter's events are distinct
				return true
			}
			sent.add(m.ID)
			if nostr.IsReplaceableKind(m.Kind) || nostr.IsAddressableKind(m.Kind) {
				sent.addVersion(versionOf(m.Kind, m, func() string { return rawD(raw) }))
			}
			return stored.add(raw)
		})
		if s.ctx.Err() != nil {
			return false // closed, replaced or disconnected
		}
		if err != nil {
			c.r.log.Warn("relay: reading stored events", "filter", f.String(), "err", err)
			c.endSub(s, "error: could not read stored events")
			return false
		}
	}
	// An event committed before the reads above but not yet broadcast
	// would reach the subscription live as well: its broadcast must come
	// while the subscription still holds back what arrives, to be weeded.
	if !c.r.write.awaitBroadcasts(s.ctx) {
		return false
	}
	// The last batch goes with EOSE, so a small answer is one write.
	if !c.out.awaitRoom(stored.size) {
		return false
	}
	s.goLive(&sent, stored.kept())
	return true
}

// storedFrames queues a REQ's stored events about batchBytes at a time:
// one lock and one wake-up of the writer per batch, which then writes it
// in one piece, rather than per event. The events' JSON (raw is valid only
// during Query's yield) is copied into one pooled buffer per batch, which
// the writer gives back once it has encoded the batch's last frame (see
// frame.done): a REQ answered with two events no longer allocates and
// clears a 64 KiB chunk, which was a tenth of a #p REQ's CPU at 1M events.
type storedFrames struct {
	out    *outbox
	head   []byte
	buf    *[]byte // the batch's copies of the events' JSON
	frames []frame
	size   int
}

const batchBytes = 32 << 10

// batchBufs are storedFrames' buffers: a batch holds under batchBytes and
// one more event, so most events fit in twice that.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2*batchBytes); return &b }}

// add queues raw's frame, or keeps it for the next batch; false once the
// outbox is closed.
func (b *storedFrames) add(raw []byte) bool {
	if b.buf == nil {
		b.buf = batchBufs.Get().(*[]byte)
	}
	var body []byte
	if buf := *b.buf; len(raw) <= cap(buf)-len(buf) {
		*b.buf = append(buf, raw...)
		body = (*b.buf)[len(buf):len(*b.buf):len(*b.buf)]
	} else { // a huge event: a copy of its own
		body = append([]byte(nil), raw...)
	}
	f := eventFrame(b.head, body)
	b.frames = append(b.frames, f)
	if b.size += f.size(); b.size < batchBytes {
		return true
	}
	return b.flush()
}

// kept hands over the frames kept for the next batch, the last of them
// carrying the batch's buffer, and starts a new batch.
func (b *storedFrames) kept() []frame {
	fs := b.frames
	if len(fs) > 0 {
		fs[len(fs)-1].done = b.buf
	}
	b.frames, b.buf, b.size = nil, nil, 0
	return fs
}

// flush queues the frames kept; false once the outbox is closed.
func (b *storedFrames) flush() bool {
	fs := b.kept()
	if len(fs) == 0 {
		return true
	}
	ok := b.out.sendAll(fs)
	clear(fs)
	b.frames = fs[:0]
	return ok
}

// onClose handles ["CLOSE", <sub id>].
func (c *conn) onClose(m message) {
	id, reason := m.subID()
	if reason != "" {
		c.send(noticeMessage(reason))
		return
	}
	c.unsubscribe(id)
}

// onCount handles ["COUNT", <sub id>, <filter>...] (NIP-45): the number of
// distinct events matching any of the filters, and for one filter of a case
// the NIP names (reactions to an event, followers of a key) the
// HyperLogLog of their authors, which lets a client merge relays' counts.
func (c *conn) onCount(ctx context.Context, m message) {
	id, filters, ok := c.request(m)
	if !ok {
		return
	}
	live := filters[:0]
	for _, f := range filters {
		if !matchesNothing(f) {
			f.Limit, f.LimitZero = 0, false
			live = append(live, f)
		}
	}
	var n int64
	var hll *hyperloglog.HyperLogLog
	var err error
	hidden := c.r.hiddenAt(time.Now().Unix())
	offset := -1
	if len(live) == 1 {
		offset = nip45.HyperLogLogEventPubkeyOffsetForFilter(live[0])
	}
	switch {
	case offset != -1:
		hll = hyperloglog.New(offset)
		err = c.r.events.Query(ctx, live[0], hidden, func(m Meta, _ []byte) bool {
			n++
			hll.AddBytes(m.PubKey[:])
			return true
		})
	case len(live) > 0:
		n, err = c.r.events.Count(ctx, live, hidden)
	}
	if err != nil {
		if ctx.Err() == nil {
			c.r.log.Warn("relay: counting events", "err", err)
			c.send(closedMessage(id, "error: could not count events"))
		}
		return
	}
	c.send(countMessage(id, n, hll))
}

// request splits a REQ or COUNT into its id and filters, or answers why not.
func (c *conn) request(m message) (id string, filters nostr.Filters, ok bool) {
	id, reason := m.subID()
	if reason == "" {
		filters, reason = m.filters(c.r.limits.MaxFilters)
	}
	if reason != "" {
		c.refuse(m, reason, closedMessage)
		return id, nil, false
	}
	return id, filters, true
}

// refuse answers a refused REQ, COUNT or NIP-77 message with answer
// (CLOSED, NEG-ERR) naming its subscription id when that is a string at
// all, with a NOTICE otherwise.
func (c *conn) refuse(m message, reason string, answer func(id, reason string) frame) {
	if len(m) > 1 && m[1].Type == gjson.String {
		c.send(answer(m[1].Str, reason))
		return
	}
	c.send(noticeMessage(reason))
}

// unsubscribe ends the subscription id, if open.
func (c *conn) unsubscribe(id string) {
	c.mu.Lock()
	s := c.subs[id]
	if s != nil {
		c.forget(s)
	}
	c.mu.Unlock()
	if s != nil {
		c.r.subs.remove(s)
		s.close()
	}
}

// endSub ends s from the relay's side, telling the client why.
func (c *conn) endSub(s *sub, reason string) {
	c.mu.Lock()
	if c.subs[s.id] == s {
		c.forget(s)
	}
	c.mu.Unlock()
	c.r.subs.remove(s)
	s.close()
	c.send(closedMessage(s.id, reason))
}

// query is the stored-events query for a REQ filter: limit clamped to
// max_limit, default_limit when there is none (or, when the filter itself
// bounds its results, as by ids, that bound). false: no stored events to send.
func (l Limits) query(f nostr.Filter) (nostr.Filter, bool) {
	if f.LimitZero || matchesNothing(f) {
		return f, false
	}
	switch {
	case f.Limit <= 0:
		f.Limit = l.DefaultLimit
		if bound := nostr.GetTheoreticalLimit(f); bound > 0 {
			f.Limit = bound
		}
	case f.Limit > l.MaxLimit:
		f.Limit = l.MaxLimit
	}
	return f, true
}

// matchesNothing reports whether a filter can match no event: an empty
// list of ids, kinds, authors or tag values, or since after until.
func matchesNothing(f nostr.Filter) bool {
	if (f.IDs != nil && len(f.IDs) == 0) || (f.Kinds != nil && len(f.Kinds) == 0) || (f.Authors != nil && len(f.Authors) == 0) {
		return true
	}
	for _, values := range f.Tags {
		if values != nil && len(values) == 0 {
			return true
		}
	}
	return f.Since != nil && f.Until != nil && *f.Since > *f.Until
}

// rawD is the value of the first d tag of an event's JSON ("" when none),
// as nostr.Tags.GetD reads it from the decoded event.
func rawD(raw []byte) string {
	d := ""
	gjson.GetBytes(raw, "tags").ForEach(func(_, tag gjson.Result) bool {
		if t := tag.Array(); len(t) >= 2 && t[0].Str == "d" {
			d = t[1].Str
			return false
		}
		return true
	})
	return d
}
