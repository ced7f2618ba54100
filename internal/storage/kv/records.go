package kv

import (
	"encoding/json"
	"errors"
)

// GetJSON decodes the record at key into v; found is false when there is none.
func GetJSON(txn *Txn, key []byte, v any) (found bool, err error) {
	item, err := txn.Get(key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, item.Value(func(b []byte) error { return json.Unmarshal(b, v) })
}

// PutJSON stores v at key as JSON.
func PutJSON(txn *Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

// EachJSON calls fn with every record under prefix, in key order (or reverse
// order), starting at seek when it is not nil. fn returns false to stop.
func EachJSON[T any](txn *Txn, prefix, seek []byte, reverse bool, fn func(key []byte, v T) (bool, error)) error {
	it := txn.NewIterator(IteratorOptions{Prefix: prefix, Reverse: reverse, Values: true})
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

// EachKey calls fn with every key under prefix, less the prefix, in key
// order, reading no value. rest is valid only during fn, which returns
// false to stop.
func EachKey(txn *Txn, prefix []byte, fn func(rest []byte) (bool, error)) error {
	it := txn.NewIterator(IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		more, err := fn(it.Item().Key()[len(prefix):])
		if err != nil || !more {
			return err
		}
	}
	return nil
}
