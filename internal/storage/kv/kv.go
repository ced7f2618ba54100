// Package kv is outpost's storage layer: the one package that uses badger.
// The event store (package events) and the domain records of every service
// live in one badger database, under the key prefixes listed here, so that
// one transaction can hold an event and a record together. Everything else
// reads and writes through the types of this package: DB, Txn, Item and
// Iterator, with this package's errors.
package kv

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/outpost-relay/outpost"
)

// Key prefixes: the first byte of every key, one range per user, so that no
// two ever collide. Each service subdivides its own with a second byte (see
// Key).
//
//	0x40–0x49        Nostr events and their indexes (package events)
//	0x80 and up      domain records:
const (
	PrefixEventsFirst byte = 0x40 // events: the event by id, then its indexes…
	PrefixEventsLast  byte = 0x49 // …up to the format version (see package events)

	PrefixBanlist byte = 0x80
	PrefixMintdir byte = 0x90
	PrefixFaucet  byte = 0xA0
	PrefixRelay   byte = 0xB0 // relay settings changed over NIP-86
	PrefixWallet  byte = 0xC0 // the faucet's Cashu wallet (package ecash): seed, keysets, counters, proofs, operations
	// The auditor's (package audit): its own Cashu wallets (package ecash,
	// with their own seed) and its rounds.
	PrefixAuditWallet byte = 0xC8
	PrefixAudit       byte = 0xCC
	PrefixReplay      byte = 0xD0 // one-time tokens already used (NIP-98 event ids), until they expire (store.Replays)
	PrefixWot         byte = 0xE0 // the web of trust (package wot): contact lists as follow ids, first-seen times
)

// Errors of transactions. They are badger's own values, so that telling
// them costs nothing, under names callers can use without badger.
var (
	// ErrNotFound is Txn.Get's answer when there is no record at the key.
	ErrNotFound = badger.ErrKeyNotFound
	// ErrTxnTooBig is a commit's answer when a transaction holds more than
	// badger takes at once.
	ErrTxnTooBig = badger.ErrTxnTooBig
)

// ErrWriteConflict is Update's and Record's answer when every attempt
// conflicted: a 409 the client may simply repeat.
var ErrWriteConflict = outpost.Errorf(outpost.Conflict, "write_conflict", "the record changed concurrently; try again")

// View runs fn in a read-only transaction.
func (d *DB) View(fn func(txn *Txn) error) error {
	return d.db.View(func(t *badger.Txn) error { return fn((*Txn)(t)) })
}

// Update runs fn in a read-write transaction and commits it, running it
// again when the commit conflicts. badger's transactions are optimistic: a
// commit fails with a conflict when another transaction wrote a key fn read
// since fn read it, so fn must derive everything it writes from txn (and
// reset what it captures). Some records are read and written by every
// request of a kind (the faucet's limits and budget, a mint's record during
// a probe), so under load many transactions conflict at once: attempts back
// off for a random few milliseconds, growing with each attempt, which
// spreads them out instead of letting them collide again in lockstep. After
// maxAttempts (about ten seconds of backing off at worst) the conflict is
// ErrWriteConflict. While the disk is low on space it writes nothing and
// returns ErrStorageFull (ErrDataDirGone once the data dir was removed).
func (d *DB) Update(fn func(txn *Txn) error) error {
	if err := d.Refused(recordCost); err != nil {
		return err
	}
	return d.Record(fn)
}

// Record is Update for a write that records what has already happened
// elsewhere — a payment the mint made, ecash it signed, an attempt that
// failed — and so goes ahead while the disk is low: refusing it would lose
// track of money, and the few such writes in flight when writes stop fit in
// the room the minimum keeps. Everything that starts something goes through
// Update, or asks Refused first.
func (d *DB) Record(fn func(txn *Txn) error) error {
	for attempt := 1; ; attempt++ {
		err := d.db.Update(func(t *badger.Txn) error { return fn((*Txn)(t)) })
		switch {
		case !errors.Is(err, badger.ErrConflict):
			return err
		case attempt >= maxAttempts:
			return ErrWriteConflict
		}
		time.Sleep(time.Duration(rand.IntN(attempt+1)) * time.Millisecond)
	}
}

// maxAttempts bounds Record's attempts; a variable so a test can lower it.
var maxAttempts = 200

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
