package store

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/outpost-relay/outpost"
)

// GetJSON decodes the record at key into v; found is false when there is none.
func GetJSON(txn *badger.Txn, key []byte, v any) (found bool, err error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, item.Value(func(b []byte) error { return json.Unmarshal(b, v) })
}

// PutJSON stores v at key as JSON.
func PutJSON(txn *badger.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

// maxAttempts bounds Update's retries; a variable so a test can lower it.
var maxAttempts = 200

// ErrWriteConflict is Update's answer when every attempt conflicted: a 409
// the client may simply repeat.
var ErrWriteConflict = outpost.Errorf(outpost.Conflict, "write_conflict", "the record changed concurrently; try again")

// Update runs fn in a read-write transaction and commits it, running it
// again when the commit conflicts. badger's transactions are optimistic: a
// commit fails with badger.ErrConflict when another transaction wrote a key
// fn read since fn read it, so fn must derive everything it writes from txn
// (and reset what it captures). Some records are read and written by every
// request of a kind (the faucet's limits and budget, a mint's record during
// a probe), so under load many transactions conflict at once: attempts back
// off for a random few milliseconds, growing with each attempt, which
// spreads them out instead of letting them collide again in lockstep. After
// maxAttempts (about ten seconds of backing off at worst) the conflict is
// ErrWriteConflict. While the disk is low on space it writes nothing and
// returns ErrStorageFull (ErrDataDirGone once the data dir was removed).
func Update(db *badger.DB, fn func(txn *badger.Txn) error) error {
	if err := refused(db, recordCost); err != nil {
		return err
	}
	return Record(db, fn)
}

// Record is Update for a write that records what has already happened
// elsewhere — a payment the mint made, ecash it signed, an attempt that
// failed — and so goes ahead while the disk is low: refusing it would lose
// track of money, and the few such writes in flight when writes stop fit in
// the room the minimum keeps. Everything that starts something goes through
// Update.
func Record(db *badger.DB, fn func(txn *badger.Txn) error) error {
	for attempt := 1; ; attempt++ {
		err := db.Update(fn)
		switch {
		case !errors.Is(err, badger.ErrConflict):
			return err
		case attempt >= maxAttempts:
			return ErrWriteConflict
		}
		time.Sleep(time.Duration(rand.IntN(attempt+1)) * time.Millisecond)
	}
}

// EachJSON calls fn with every record under prefix, in key order (or reverse
// order), starting at seek when it is not nil. fn returns false to stop.
func EachJSON[T any](txn *badger.Txn, prefix, seek []byte, reverse bool, fn func(key []byte, v T) (bool, error)) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: reverse, PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	if seek == nil {
		seek = prefix
		if reverse {
			seek = append(append([]byte{}, prefix...), 0xFF)
		}
	}
	for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
		var v T
		if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &v) }); err != nil {
			return err
		}
		more, err := fn(it.Item().KeyCopy(nil), v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
