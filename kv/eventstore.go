package kv

import (
	"context"

	bbackend "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
)

// QueryEventstore reads events that eventstore v0.17.8's badger backend
// stored in d (under prefixes 0–8), with that backend, which alone knows
// their encoding, returning at most limit: only so that package events can
// move them into its own layout.
func (d *DB) QueryEventstore(ctx context.Context, f nostr.Filter, limit int) (chan *nostr.Event, error) {
	old := &bbackend.BadgerBackend{DB: d.db, MaxLimit: limit}
	return old.QueryEvents(ctx, f)
}

// DropPrefix deletes every record under each of prefixes at once, outside
// any transaction.
func (d *DB) DropPrefix(prefixes ...[]byte) error { return d.db.DropPrefix(prefixes...) }
