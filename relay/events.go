package relay

import (
	"context"
	"encoding/hex"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip40"
	"github.com/outpost-relay/outpost/internal/storage/events"
)

// Meta is what the relay knows of a stored event without decoding it.
type Meta = events.Meta

// EventReader is how REQ, COUNT, NIP-77 and NIP-09 read the store (*events.Store).
type EventReader interface {
	// Query yields the events matching f, each once, newest first: at most
	// f.Limit of them when f.Limit > 0 (events skip rejects don't count),
	// never an expired one. raw is the event's JSON, valid only during
	// yield; yield returns false to stop.
	Query(ctx context.Context, f nostr.Filter, skip func(Meta) bool, yield func(m Meta, raw []byte) bool) error
	// Count is the number of distinct live events matching any of filters.
	Count(ctx context.Context, filters []nostr.Filter, skip func(Meta) bool) (int64, error)
	// Deleted reports whether a live deletion request (NIP-09) by pubkey
	// names the event id.
	Deleted(ctx context.Context, id, pubkey string) (bool, error)
}

// metaOf describes an event whose id and pubkey are valid hex.
func metaOf(ev *nostr.Event) Meta {
	m := Meta{Kind: ev.Kind, CreatedAt: ev.CreatedAt}
	hex.Decode(m.ID[:], []byte(ev.ID))
	hex.Decode(m.PubKey[:], []byte(ev.PubKey))
	if exp := nip40.GetExpiration(ev.Tags); exp > 0 {
		m.Expiration = exp
	}
	return m
}

// gatedReader holds the relay's gate for every call, so the store is not
// closed under a query.
type gatedReader struct {
	g  *gate
	er EventReader
}

func (r gatedReader) Query(ctx context.Context, f nostr.Filter, skip func(Meta) bool, yield func(Meta, []byte) bool) error {
	if !r.g.enter() {
		return errShuttingDown
	}
	defer r.g.exit()
	return r.er.Query(ctx, f, skip, yield)
}

func (r gatedReader) Count(ctx context.Context, filters []nostr.Filter, skip func(Meta) bool) (int64, error) {
	if !r.g.enter() {
		return 0, errShuttingDown
	}
	defer r.g.exit()
	return r.er.Count(ctx, filters, skip)
}

func (r gatedReader) Deleted(ctx context.Context, id, pubkey string) (bool, error) {
	if !r.g.enter() {
		return false, errShuttingDown
	}
	defer r.g.exit()
	return r.er.Deleted(ctx, id, pubkey)
}
