// Package store opens outpost's single badger database. Nostr events and
// their indexes live under key prefixes 0x40–0x47 (package events; 0–8 and
// 255 are eventstore v0.17.8's old layout, moved into the new one and
// deleted at Open); our domain records live under the prefixes below, far
// from those, so one badger transaction can hold an event and a record
// together.
package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/outpost-relay/outpost/events"
)

// Key prefixes of domain records. Each service subdivides its own with a
// second byte; keep the list here so no two services ever collide.
//
//	0x00–0x08, 0xFF  eventstore v0.17.8's events (only until Open moves them)
//	0x40–0x47        Nostr events and their indexes (events.FirstPrefix–LastPrefix)
//	0x80 and up      domain records:
const (
	PrefixBanlist byte = 0x80
	PrefixMintdir byte = 0x90
	PrefixFaucet  byte = 0xA0
	PrefixRelay   byte = 0xB0 // relay settings changed over NIP-86
	PrefixWallet  byte = 0xC0 // the faucet's Cashu wallet (package ecash): seed, keysets, counters, proofs, operations
)

// ErrLocked is returned by Open when another process holds the database.
var ErrLocked = errors.New("the database is in use by another outpost process")

// Store is the one badger database: Events is the relay's event store, DB the
// same database for domain records.
type Store struct {
	Events *events.Store
	DB     *badger.DB
}

// Open opens (or creates) <dataDir>/badger and moves events still in
// eventstore's layout into the event store's.
func Open(dataDir string, log *slog.Logger) (*Store, error) {
	path := filepath.Join(dataDir, "badger")
	db, err := badger.Open(options(path, log))
	if err != nil {
		if isLockError(err) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("open badger at %s: %w", path, err)
	}
	ev, err := events.Open(db, log.With("component", "events"))
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{Events: ev, DB: db}, nil
}

// options are badger's options for the database at path.
func options(path string, log *slog.Logger) badger.Options {
	return badger.DefaultOptions(path).
		WithLogger(badgerLogger{log.With("component", "badger")}).
		WithLoggingLevel(badger.WARNING)
}

// Close closes the database; call it after everything else has stopped.
func (s *Store) Close() error { return s.DB.Close() }

// Check is a cheap liveness probe for /health.
func (s *Store) Check(ctx context.Context) error {
	if s.DB.IsClosed() {
		return errors.New("database closed")
	}
	return s.DB.View(func(*badger.Txn) error { return ctx.Err() })
}

func isLockError(err error) bool {
	// badger reports a held directory lock only as text.
	return err != nil && (strings.Contains(err.Error(), "Cannot acquire directory lock") ||
		strings.Contains(err.Error(), "resource temporarily unavailable"))
}

// Key joins a prefix byte, a kind byte and parts into one key.
func Key(prefix, kind byte, parts ...[]byte) []byte {
	n := 2
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 2, n)
	k[0], k[1] = prefix, kind
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

// U64 encodes v big-endian, so keys sort by number.
func U64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

type badgerLogger struct{ log *slog.Logger }

func (l badgerLogger) Errorf(f string, a ...any)   { l.log.Error(fmt.Sprintf(f, a...)) }
func (l badgerLogger) Warningf(f string, a ...any) { l.log.Warn(fmt.Sprintf(f, a...)) }
func (l badgerLogger) Infof(f string, a ...any)    { l.log.Info(fmt.Sprintf(f, a...)) }
func (l badgerLogger) Debugf(f string, a ...any)   { l.log.Debug(fmt.Sprintf(f, a...)) }
