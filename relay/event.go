package relay

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip70"
)

// onEvent handles ["EVENT", <event>]: checks of form, limits, signature and
// NIP-70, then khatru's AddEvent (every RejectEvent policy, the store), then
// NIP-09 deletions and the broadcast.
func (c *conn) onEvent(ctx context.Context, m message) {
	id := m.eventID(1)
	if id == "" {
		c.send(noticeMessage("invalid: an EVENT message carries an event with an id"))
		return
	}
	start := time.Now()
	ok, reason := c.r.acceptEvent(ctx, c, m)
	c.send(okMessage(id, ok, reason))
	c.r.observer.EventAnswered(ok, reason, time.Since(start))
}

func (r *Relay) acceptEvent(ctx context.Context, c *conn, m message) (bool, string) {
	if len(m) != 2 {
		return false, `invalid: an EVENT message is ["EVENT", <event>]`
	}
	if ok, wait := r.ipEvents.Allow(c.ip); !ok {
		return false, fmt.Sprintf("rate-limited: too many events from your address; try again in %s", roundUp(wait))
	}
	ev, reason := m.event(1)
	if reason != "" {
		return false, reason
	}
	if reason := r.limits.checkEvent(ev); reason != "" {
		return false, reason
	}
	if !r.verifySignature(ev) {
		return false, "invalid: the signature does not verify"
	}
	// After the signature: nobody can spend someone else's allowance.
	if ok, wait := r.authorEvents.Allow(ev.PubKey); !ok {
		return false, fmt.Sprintf("rate-limited: too many events from this key; try again in %s", roundUp(wait))
	}
	if ev.Kind == nostr.KindClientAuthentication {
		return false, `invalid: kind-22242 events are sent in an AUTH message, never stored`
	}
	if nip70.IsProtected(*ev) {
		if !c.authedAs(ev.PubKey) {
			if len(c.authed()) == 0 {
				c.requestAuth()
				return false, "auth-required: this event is protected (NIP-70); authenticate as its author"
			}
			return false, "restricted: a protected event (NIP-70) is only accepted from its author"
		}
	} else if nip70.HasEmbeddedProtected(*ev) {
		return false, "blocked: reposts of protected events (NIP-70) are not accepted"
	}
	return r.add(ctx, c, ev)
}

// add runs an event through khatru's pipeline and, once it is in, through
// NIP-09 and the broadcast.
func (r *Relay) add(ctx context.Context, c *conn, ev *nostr.Event) (bool, string) {
	skip, err := r.Relay.AddEvent(ctx, ev)
	if err != nil {
		reason := err.Error()
		if strings.HasPrefix(reason, "auth-required:") && c != nil {
			c.requestAuth()
		}
		return false, reason
	}
	if ev.Kind == nostr.KindDeletion {
		r.deleteRequested(ctx, ev)
	}
	if skip {
		return true, "duplicate: already have this event"
	}
	r.broadcast(ev)
	return true, ""
}

// checkEvent checks an event's form and size; it says why it is refused.
func (l Limits) checkEvent(ev *nostr.Event) string {
	if !isHex(ev.PubKey, 64) {
		return "invalid: pubkey must be 64 lowercase hex characters"
	}
	if !isHex(ev.Sig, 128) {
		return "invalid: sig must be 128 lowercase hex characters"
	}
	if !isHex(ev.ID, 64) || !ev.CheckID() {
		return "invalid: the id is not the hash of the event"
	}
	if ev.Kind < 0 || ev.Kind > 65535 {
		return "invalid: kind must be from 0 to 65535"
	}
	if ev.CreatedAt < 0 {
		return "invalid: created_at is negative"
	}
	if ev.CreatedAt > nostr.Now()+nostr.Timestamp(maxFuture/time.Second) {
		return fmt.Sprintf("invalid: created_at is more than %d seconds in the future", int(maxFuture/time.Second))
	}
	if l.MaxEventTags > 0 && len(ev.Tags) > l.MaxEventTags {
		return fmt.Sprintf("invalid: %d tags, at most %d allowed", len(ev.Tags), l.MaxEventTags)
	}
	if l.MaxContentLength > 0 && len(ev.Content) > l.MaxContentLength {
		if n := utf8.RuneCountInString(ev.Content); n > l.MaxContentLength {
			return fmt.Sprintf("invalid: content has %d characters, at most %d allowed", n, l.MaxContentLength)
		}
	}
	for _, tag := range ev.Tags {
		if len(tag) > 1 && len(tag[0]) == 1 && len(tag[1]) > maxTagValue {
			return fmt.Sprintf("invalid: the value of a %q tag is over %d bytes", tag[0], maxTagValue)
		}
	}
	return ""
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// roundUp says how long to wait, in whole seconds.
func roundUp(d time.Duration) string {
	return fmt.Sprintf("%ds", int((d+time.Second-1)/time.Second))
}

// broadcast sends an accepted event to every subscription it matches, once
// each, encoding it once. It never waits for a client.
func (r *Relay) broadcast(ev *nostr.Event) {
	m := metaOf(ev)
	if r.hidden(m, time.Now().Unix()) {
		return
	}
	body, err := ev.MarshalJSON()
	if err != nil {
		return
	}
	r.subs.broadcast(ev, m, body)
}

// hidden reports whether an event is kept from readers at now: its author
// is banned, or a moderator removed it. Nothing is deleted; when the ban
// lifts the events are served again.
func (r *Relay) hidden(m Meta, now int64) bool {
	return r.banList != nil && r.banList.Hides(m.ID, m.PubKey, now)
}

// hiddenAt is hidden with the clock read once, for a query that asks it of
// every event it reads.
func (r *Relay) hiddenAt(now int64) func(Meta) bool {
	return func(m Meta) bool { return r.hidden(m, now) }
}
