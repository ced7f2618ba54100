package relay

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// onAuth handles ["AUTH", <kind-22242 event>] (NIP-42). The event proves
// who the client is; it is never stored or broadcast.
func (c *conn) onAuth(m message) {
	id := m.eventID(1)
	if id == "" {
		c.send(noticeMessage("invalid: an AUTH message carries a signed kind-22242 event"))
		return
	}
	ev, reason := m.event(1)
	if reason == "" {
		reason = c.r.checkAuth(ev, c.challenge)
	}
	if reason != "" {
		c.send(okMessage(id, false, reason))
		return
	}
	c.mu.Lock()
	if !slices.Contains(c.pubkeys, ev.PubKey) {
		c.pubkeys = append(c.pubkeys, ev.PubKey)
	}
	c.mu.Unlock()
	c.send(okMessage(id, true, ""))
}

// authWindow is how far an AUTH event's created_at may be from now.
const authWindow = 10 * time.Minute

// checkAuth validates a NIP-42 event against this connection's challenge and
// the relay's URL; it says why it is refused.
func (r *Relay) checkAuth(ev *nostr.Event, challenge string) string {
	if ev.Kind != nostr.KindClientAuthentication {
		return "invalid: an AUTH event has kind 22242"
	}
	if !isHex(ev.ID, 64) || !ev.CheckID() {
		return refusedID
	}
	if d := time.Since(ev.CreatedAt.Time()); d > authWindow || d < -authWindow {
		return "invalid: created_at is more than 10 minutes from now"
	}
	if ev.Tags.FindWithValue("challenge", challenge) == nil {
		return "invalid: the challenge tag is not this connection's challenge"
	}
	if tag := ev.Tags.Find("relay"); tag == nil || !sameRelayURL(tag[1], r.wsURL) {
		return "invalid: the relay tag is not " + r.wsURL
	}
	if !isHex(ev.PubKey, 64) {
		return refusedPubKey
	}
	if !r.keys.verify(ev) {
		return refusedSignature
	}
	return ""
}

// sameRelayURL compares websocket URLs as NIP-42 asks: scheme, host and
// path, ignoring case and a trailing slash.
func sameRelayURL(a, b string) bool {
	ua, err1 := url.Parse(strings.ToLower(strings.TrimSuffix(a, "/")))
	ub, err2 := url.Parse(strings.ToLower(strings.TrimSuffix(b, "/")))
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host && ua.Path == ub.Path
}
