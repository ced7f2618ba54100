package relay

import (
	"sync/atomic"
	"time"
)

// Observer is told what the relay answers, for metrics. Its methods run on
// the relay's hot path: they must be quick and never block.
type Observer interface {
	// EventAnswered is called once an EVENT is answered with OK; reason is
	// the OK message ("" when accepted, "duplicate: ..." for a known event).
	EventAnswered(ok bool, reason string, took time.Duration)
	// ReqAnswered is called when a REQ's stored events are sent and EOSE is
	// queued.
	ReqAnswered(took time.Duration)
	// BatchCommitted is called as the writer commits a transaction of
	// events (writer.go), before any of them is answered: how well writes
	// group under load shows in the sizes.
	BatchCommitted(events int)
}

type noObserver struct{}

func (noObserver) EventAnswered(bool, string, time.Duration) {}
func (noObserver) ReqAnswered(time.Duration)                 {}
func (noObserver) BatchCommitted(int)                        {}

// Stats are the relay's figures at this moment, for metrics.
type Stats struct {
	Clients       int // open websocket connections
	Subscriptions int // open REQ subscriptions, over every connection
	FilterValues  int // ids, authors, kinds and tag values their filters name
	// Refusals by the per-IP and per-author limits since start.
	ConnectionsRefused   uint64 // handshakes answered 429 (OUTPOST_RELAY_IP_CONNECTIONS)
	IPEventsRefused      uint64 // OUTPOST_RELAY_IP_EVENTS_PER_MINUTE
	AuthorEventsRefused  uint64 // OUTPOST_RELAY_EVENTS_PER_MINUTE
	SubscriptionsRefused uint64 // REQs refused by OUTPOST_RELAY_MAX_SUBSCRIPTIONS
	FilterValuesRefused  uint64 // REQs refused by OUTPOST_RELAY_MAX_FILTER_VALUES or OUTPOST_RELAY_IP_FILTER_VALUES
}

// counters are the relay's own refusal counts.
type counters struct {
	connectionsRefused, subscriptionsRefused, filterValuesRefused atomic.Uint64
}
