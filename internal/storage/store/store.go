// Package store opens outpost's single database: the event store (package
// events) and the domain records of every service, each under its key
// prefixes, on the storage layer both use (package kv).
package store

import (
	"context"
	"errors"
	"log/slog"

	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Store is the one database: Events is the relay's event store, DB the
// same database for domain records (and its operation: Close, Health,
// Backup, ReleasePages).
type Store struct {
	Events *events.Store
	*kv.DB
}

// Open opens the store in dataDir with the default settings, less reading
// its tables into memory: for the commands (backup, the admin ones) and
// tests that open it for a moment. outpost serve opens it with its
// settings (OpenWith), which warm it.
func Open(dataDir string, log *slog.Logger) (*Store, error) {
	s := kv.DefaultSettings()
	s.WarmStore = false
	return OpenWith(context.Background(), s, dataDir, log)
}

// OpenWith opens (or creates) the database in dataDir (see kv.Settings.Open)
// and the event store on it. A data dir in another format than this
// version's (see Format) is refused with ErrOtherFormat before anything in
// it is written.
func OpenWith(ctx context.Context, s kv.Settings, dataDir string, log *slog.Logger) (*Store, error) {
	if err := refuseGonutsWallet(dataDir); err != nil {
		return nil, err
	}
	db, err := s.Open(dataDir, log)
	if err != nil {
		return nil, err
	}
	ev, err := events.Open(ctx, db, log.With("component", "events"))
	if err != nil {
		db.Abandon()
		if fe := (*events.FormatError)(nil); errors.As(err, &fe) {
			return nil, otherFormat(dataDir, "events in "+fe.Found)
		}
		return nil, err
	}
	ev.Cache(s.EventCache())
	return &Store{Events: ev, DB: db}, nil
}
