package relay

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// Limits bound what one client may ask of the relay; they are operator
// settings (package settings binds them). For every field but MaxLimit and
// DefaultLimit, 0 means no limit. Those NIP-11 can express are advertised
// in its limitation object.
type Limits struct {
	EventsPerMinute   int `flag:"relay-events-per-minute" usage:"EVENTs per minute per author key; 0 disables"`
	IPEventsPerMinute int `flag:"relay-ip-events-per-minute" usage:"EVENTs per minute per client IP; 0 disables"`
	ConnectionsPerIP  int `flag:"relay-ip-connections" usage:"open websocket connections per client IP; 0 disables"`
	MaxSubscriptions  int `flag:"relay-max-subscriptions" usage:"open subscriptions per connection (NIP-11 max_subscriptions); 0 disables"`
	MaxFilters        int `flag:"relay-max-filters" usage:"filters per REQ or COUNT (max_filters); 0 disables"`
	MaxFilterValues   int `flag:"relay-max-filter-values" usage:"ids, authors, kinds and tag values named by the filters of one connection's open subscriptions, together (a filter naming none counts 1); 0 disables"`
	IPFilterValues    int `flag:"relay-ip-filter-values" usage:"the same over every connection from one client IP; 0 disables"`
	MaxEventTags      int `flag:"relay-max-event-tags" usage:"tags per event (max_event_tags); 0 disables"`
	MaxContentLength  int `flag:"relay-max-content-length" usage:"characters of an event's content (max_content_length); 0 disables"`
	MaxMessageLength  int `flag:"relay-max-message-length" usage:"bytes of one client message (max_message_length); 0: frames up to 16 MiB"`
	MaxLimit          int `flag:"relay-max-limit" usage:"a filter's limit is clamped to this (max_limit)"`
	DefaultLimit      int `flag:"relay-default-limit" usage:"events a filter without a limit gets (default_limit)"`
}

// DefaultLimits are values for a relay open to the public internet.
func DefaultLimits() Limits {
	return Limits{
		EventsPerMinute:   60,
		IPEventsPerMinute: 300,
		ConnectionsPerIP:  50,
		MaxSubscriptions:  50,
		MaxFilters:        20,
		MaxFilterValues:   10_000,
		IPFilterValues:    50_000,
		MaxEventTags:      2000,
		MaxContentLength:  65535,
		MaxMessageLength:  256 << 10,
		MaxLimit:          500,
		DefaultLimit:      100,
	}
}

// Valid checks the limits, naming the setting at fault.
func (l Limits) Valid() error {
	var errs []error
	for flag, v := range map[string]int{"relay-events-per-minute": l.EventsPerMinute, "relay-ip-events-per-minute": l.IPEventsPerMinute,
		"relay-ip-connections": l.ConnectionsPerIP, "relay-max-subscriptions": l.MaxSubscriptions, "relay-max-filters": l.MaxFilters,
		"relay-max-filter-values": l.MaxFilterValues, "relay-ip-filter-values": l.IPFilterValues,
		"relay-max-event-tags": l.MaxEventTags, "relay-max-content-length": l.MaxContentLength} {
		if v < 0 {
			errs = append(errs, settings.Errorf(flag, "must be 0 or more"))
		}
	}
	if l.MaxMessageLength != 0 && (l.MaxMessageLength < 1024 || l.MaxMessageLength > hardFrameNoLimit) {
		errs = append(errs, settings.Errorf("relay-max-message-length", "must be 0 or from 1024 to %d", hardFrameNoLimit))
	}
	if l.MaxLimit < 1 {
		errs = append(errs, settings.Errorf("relay-max-limit", "must be at least 1"))
	}
	if l.DefaultLimit < 1 || l.DefaultLimit > l.MaxLimit {
		errs = append(errs, settings.Errorf("relay-default-limit", "must be from 1 to --relay-max-limit (%d)", l.MaxLimit))
	}
	return errors.Join(errs...)
}

// Fixed limits: NIP-01 caps subscription ids at 64 characters; a created_at
// further ahead than maxFuture would hide an event from queries that start
// at "now"; single-letter tag values are indexed, so they stay short.
const (
	maxSubIDLength   = 64
	maxFuture        = 15 * time.Minute
	maxTagValue      = 1024
	hardFrameNoLimit = 16 << 20 // frame limit when MaxMessageLength is 0
)

// frameLimit is the largest frame read at all: above MaxMessageLength, so
// an over-long EVENT or REQ is still read and answered with its id; beyond
// it the connection is closed (1009).
func (l Limits) frameLimit() int64 {
	if l.MaxMessageLength <= 0 {
		return hardFrameNoLimit
	}
	return 2 * int64(l.MaxMessageLength)
}

// Connection-level tuning: how much may wait to be written to one client,
// and how long a write may make no progress, before the client is dropped.
const (
	defaultOutboxBytes  = 4 << 20
	defaultWriteTimeout = 10 * time.Second
	defaultPingInterval = 30 * time.Second
	maxInFlight         = 8 // messages of one connection handled at once
	maxWriteBatch       = 256 << 10
	socketSendBuffer    = 256 << 10 // SO_SNDBUF of a websocket connection (the kernel doubles it)
)

// heldValues counts, per client address, the filter values its open
// subscriptions name (Limits.IPFilterValues).
type heldValues struct {
	mu sync.Mutex
	n  map[string]int
}

// take counts n more values for ip, freed fewer (those of a subscription
// being replaced, given back after), unless that makes more than max (0: no
// limit); it returns the total it would make.
func (h *heldValues) take(ip string, n, freed, max int) (total int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	total = h.n[ip] - freed + n
	if max > 0 && total > max {
		return total, false
	}
	if n > 0 {
		h.n[ip] += n
	}
	return total, true
}

func (h *heldValues) give(ip string, n int) {
	if n == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n[ip] -= n; h.n[ip] <= 0 {
		delete(h.n, ip)
	}
}

func (h *heldValues) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, v := range h.n {
		n += v
	}
	return n
}

// remoteIP is the host part of r.RemoteAddr.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
