package store

import (
	"encoding/json"
	"errors"

	"github.com/dgraph-io/badger/v4"
	"github.com/outpost-relay/outpost/kv"
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

// Update runs fn in a read-write transaction and commits it, running it
// again when the commit conflicts, as kv.DB.Update does. While the disk is
// low on space it writes nothing and returns ErrStorageFull (ErrDataDirGone
// once the data dir was removed).
func Update(db *badger.DB, fn func(txn *badger.Txn) error) error {
	if err := refused(db, recordCost); err != nil {
		return err
	}
	return Record(db, fn)
}

// Record is Update for a write that records what has already happened
// elsewhere, as kv.DB.Record.
func Record(db *badger.DB, fn func(txn *badger.Txn) error) error {
	return kv.Retry(func() error { return db.Update(fn) })
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
