package relay

import (
	"bytes"
	"context"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
	"github.com/tidwall/gjson"
)

// onReq handles ["REQ", <sub id>, <filter>...]: the subscription is
// registered at once (so nothing published from now on is missed), its
// stored events are sent, then EOSE and what arrived meanwhile.
func (c *conn) onReq(m message) {
	id, filters, ok := c.request(m)
	if !ok {
		c.unsubscribe(id) // a refused REQ ends a subscription it would have replaced
		return
	}
	c.mu.Lock()
	old := c.subs[id]
	if max := c.r.limits.MaxSubscriptions; old == nil && max > 0 && len(c.subs) >= max {
		c.mu.Unlock()
		c.send(closedMessage(id, fmt.Sprintf("rate-limited: %d subscriptions are open, at most %d allowed; close one first", max, max)))
		return
	}
	s := newSub(c, id, filters)
	c.subs[id] = s
	c.mu.Unlock()
	if old != nil { // a REQ with an open subscription's id replaces it
		c.r.subs.remove(old)
		old.close()
	}
	c.r.subs.add(s)
	c.spawn(func(context.Context) { c.sendStored(s) })
}

// sendStored sends a subscription's stored events, each once, each frame
// the stored JSON with the subscription id spliced in, then makes it live.
func (c *conn) sendStored(s *sub) {
	sent := map[string]struct{}{}
	for _, f := range s.filters {
		q, ok := c.r.limits.query(f)
		if !ok {
			continue
		}
		err := c.r.events.Query(s.ctx, q, c.r.hidden, func(m Meta, raw []byte) bool {
			if _, dup := sent[m.ID]; dup {
				return true
			}
			sent[m.ID] = struct{}{}
			return c.out.send(eventFrame(s.head, bytes.Clone(raw)))
		})
		if s.ctx.Err() != nil {
			return // closed, replaced or disconnected
		}
		if err != nil {
			c.r.log.Warn("relay: reading stored events", "filter", f.String(), "err", err)
			c.endSub(s, "error: could not read stored events")
			return
		}
	}
	s.goLive(sent)
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
// distinct events matching any of the filters.
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
	if len(live) > 0 {
		var err error
		if n, err = c.r.events.Count(ctx, live, c.r.hidden); err != nil {
			if ctx.Err() == nil {
				c.r.log.Warn("relay: counting events", "err", err)
				c.send(closedMessage(id, "error: could not count events"))
			}
			return
		}
	}
	c.send(countMessage(id, n))
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
	delete(c.subs, id)
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
		delete(c.subs, s.id)
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
