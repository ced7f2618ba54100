package relay

import (
	"net"
	"net/http"
	"time"
)

// Limits bound what one client may ask of the relay. For every field but
// MaxLimit and DefaultLimit, 0 means no limit. Those NIP-11 can express are
// advertised in its limitation object.
type Limits struct {
	EventsPerMinute   int // EVENTs per author public key (after the signature is checked)
	IPEventsPerMinute int // EVENTs per client IP
	ConnectionsPerIP  int // open websocket connections per client IP
	MaxSubscriptions  int // open REQ subscriptions per connection (max_subscriptions)
	MaxFilters        int // filters in one REQ or COUNT (max_filters)
	MaxEventTags      int // tags in one event (max_event_tags)
	MaxContentLength  int // characters of an event's content (max_content_length)
	MaxMessageLength  int // bytes of one incoming message (max_message_length)
	MaxLimit          int // a filter's limit is clamped to this (max_limit)
	DefaultLimit      int // the limit of a filter that has none (default_limit)
}

// DefaultLimits are values for a relay open to the public internet.
func DefaultLimits() Limits {
	return Limits{
		EventsPerMinute:   60,
		IPEventsPerMinute: 300,
		ConnectionsPerIP:  50,
		MaxSubscriptions:  50,
		MaxFilters:        20,
		MaxEventTags:      2000,
		MaxContentLength:  65535,
		MaxMessageLength:  256 << 10,
		MaxLimit:          500,
		DefaultLimit:      100,
	}
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

// remoteIP is the host part of r.RemoteAddr.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
