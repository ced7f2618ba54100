package banlist

import (
	"context"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// The moderation lists (allowed keys, kind rules, blocked addresses, banned
// and allowed events) are small records set, listed and removed whole. Each
// change is one transaction with its audit entry, under the write lock, and
// reaches the snapshot only once it is committed.

// update runs fn in one transaction, then apply if it committed.
func (s *Service) update(fn func(txn *kv.Txn) error, apply func()) error {
	s.writes.Lock()
	defer s.writes.Unlock()
	if err := s.db.Update(fn); err != nil {
		return err
	}
	apply()
	return nil
}

// setRecord writes v at key and audits it, with the record it replaces (if
// any) as before; replaced tells whether there was one.
func setRecord[T any](s *Service, txn *kv.Txn, actor, action, target string, key []byte, v T) (replaced bool, err error) {
	var old T
	found, err := kv.GetJSON(txn, key, &old)
	if err != nil {
		return false, err
	}
	if err := kv.PutJSON(txn, key, v); err != nil {
		return false, err
	}
	var before any
	if found {
		before = old
	}
	return found, s.audit(txn, actor, action, target, before, v)
}

// removeRecord deletes the record at key and audits it; without one it
// returns notFound (nil: nothing to do, no error).
func removeRecord[T any](s *Service, txn *kv.Txn, actor, action, target string, key []byte, notFound error) (T, bool, error) {
	var old T
	found, err := kv.GetJSON(txn, key, &old)
	if err != nil || !found {
		return old, false, cmpErr(err, notFound)
	}
	if err := txn.Delete(key); err != nil {
		return old, false, err
	}
	return old, true, s.audit(txn, actor, action, target, old, nil)
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// listRecords lists the records of one kind, in key order.
func listRecords[T any](ctx context.Context, db *kv.DB, kind byte) ([]T, error) {
	out := []T{}
	err := db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, []byte{kv.PrefixBanlist, kind}, nil, false, func(_ []byte, v T) (bool, error) {
			out = append(out, v)
			return true, ctx.Err()
		})
	})
	return out, err
}
