package events

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/tick"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Outcome is what Save did with an event.
type Outcome int

const (
	Stored     Outcome = iota // the event is stored now
	Duplicate                 // the same event was already stored
	Superseded                // a newer version of its address is stored; this one was not
)

func (o Outcome) String() string {
	return [...]string{"stored", "duplicate", "superseded"}[o]
}

// Save stores ev. A replaceable or addressable event replaces the stored
// version of its address when it is newer (NIP-01: created_at, then the
// lowest id) and is not stored otherwise. The check, the replacement and the
// insert are one transaction.
func (s *Store) Save(ctx context.Context, ev *nostr.Event) (Outcome, error) {
	p, err := prepare(ev)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	out, bad, err := s.putAll([]prepared{p})
	if err != nil {
		return 0, err
	}
	return out[0], bad[0]
}

// put writes one event in txn.
func (s *Store) put(txn *kv.Txn, d *decodedEvent, val []byte, keys [][]byte, addr string, replaceable bool) (Outcome, error) {
	if found, err := txn.Has(idKey(d.id[:])); err != nil || found {
		return Duplicate, err
	}
	tail := d.tail()
	if replaceable {
		ak := addressKey(d.kind, d.pubkey[:], addr)
		item, err := txn.Get(ak)
		switch {
		case err == nil:
			oldTail, err := item.ValueCopy(nil)
			if err != nil {
				return 0, err
			}
			if len(oldTail) != tailLen {
				break // damaged: take it
			}
			old, err := txn.Get(eventKey(oldTail))
			if errors.Is(err, kv.ErrNotFound) {
				break // an address left pointing at nothing: take it
			} else if err != nil {
				return 0, err
			}
			var superseded bool
			err = old.Value(func(oldVal []byte) error {
				m, err := meta(oldTail[8:], oldVal)
				if err != nil {
					return err
				}
				if !newer(d.createdAt, d.id[:], m.CreatedAt, m.ID[:]) {
					superseded = true
					return nil
				}
				return s.remove(txn, oldTail, oldVal)
			})
			if err != nil || superseded {
				return Superseded, err
			}
		case !errors.Is(err, kv.ErrNotFound):
			return 0, err
		}
		if err := txn.Set(ak, tail); err != nil {
			return 0, err
		}
	}
	flags := d.keyMeta()
	if err := txn.SetMeta(eventKey(tail), val, flags); err != nil {
		return 0, err
	}
	if err := txn.Set(idKey(d.id[:]), tail[:8]); err != nil {
		return 0, err
	}
	s.newest.raise(d.pubkey[:], d.kind, int64(d.createdAt))
	for _, k := range keys {
		if err := txn.SetMeta(k, nil, flags); err != nil {
			return 0, err
		}
	}
	if err := addTombstones(txn, d); err != nil {
		return 0, err
	}
	return Stored, nil
}

// remove deletes a stored event, its value val at tail, and every key
// derived from it in txn, a deletion request's tombstones too.
func (s *Store) remove(txn *kv.Txn, tail, val []byte) error {
	d, ev, err := decodeStored(tail[8:], val)
	if err != nil {
		return err
	}
	for _, k := range d.indexKeys() {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	if err := removeTombstones(txn, &d); err != nil {
		return err
	}
	if hasAddress(ev.Kind) {
		ak := addressKey(d.kind, d.pubkey[:], address(ev.Kind, ev.Tags))
		if item, err := txn.Get(ak); err == nil {
			if err := item.Value(func(cur []byte) error {
				if bytes.Equal(cur, tail) {
					return txn.Delete(ak)
				}
				return nil
			}); err != nil {
				return err
			}
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
	}
	if err := txn.Delete(idKey(tail[8:])); err != nil {
		return err
	}
	return txn.Delete(eventKey(tail))
}

// Delete removes the event with this id; deleted is false when there was none.
func (s *Store) Delete(ctx context.Context, id string) (deleted bool, err error) {
	var key [32]byte
	if !parseHex32(id, &key) {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	err = s.update(deleteCost, func(txn *kv.Txn) error {
		deleted, err = s.deleteTxn(txn, key[:])
		return err
	})
	return deleted, err
}

// Refusals of writes while the disk is low or the data dir gone: their text
// is what the relay answers in the OK message (NIP-01's "error:" prefix),
// and to a REST handler that publishes an event they are still
// kv.ErrStorageFull or kv.ErrDataDirGone. The same value every time it
// means the same.
var (
	errLowSpace = refusal{"error: the relay is low on disk space and accepts no new events until space is freed", kv.ErrStorageFull}
	errGone     = refusal{"error: the relay's storage is unavailable and it accepts no new events until it is restarted", kv.ErrDataDirGone}
)

// refusal is a write the database's free-space gate refused; the gate logs why.
type refusal struct {
	msg string
	err error
}

func (r refusal) Error() string { return r.msg }
func (r refusal) Unwrap() error { return r.err }

// What update charges the free-space gate for the parts of a write it does
// not count: each key's entry in badger's log and tables, and a deletion.
const (
	entryOverhead = 32
	deleteCost    = 1 << 10
)

// update runs fn in a write transaction, again when it lost a conflict to a
// concurrent write of the same keys (fn must start over each time; see
// kv.DB.Update). cost is roughly what it writes, for the free-space gate,
// which it asks first.
func (s *Store) update(cost int, fn func(txn *kv.Txn) error) error {
	switch err := s.db.Refused(int64(cost)); {
	case errors.Is(err, kv.ErrDataDirGone):
		return errGone
	case err != nil:
		return errLowSpace
	}
	return s.db.Record(fn)
}

func (s *Store) deleteTxn(txn *kv.Txn, id []byte) (bool, error) {
	tail, err := findTail(txn, id)
	if tail == nil || err != nil {
		return false, err
	}
	item, err := txn.Get(eventKey(tail))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, item.Value(func(val []byte) error { return s.remove(txn, tail, val) })
}

// findTail reads the ts and id that end the keys of the stored event id
// from its id key; nil when there is no such event, or when the key holds
// something else than a ts (which this code never writes). Get rather than AppendValue: its copies of 8 bytes cost less
// than building a key iterator.
func findTail(txn *kv.Txn, id []byte) ([]byte, error) {
	item, err := txn.Get(idKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if item.ValueSize() != 8 {
		return nil, nil
	}
	tail, err := item.ValueCopy(make([]byte, 0, tailLen))
	if err != nil {
		return nil, err
	}
	return append(tail, id...), nil
}

// DeleteExpired deletes the events whose NIP-40 expiration is at or before
// now, in batches, and returns how many it deleted. Queries already leave
// them out; this frees their space.
func (s *Store) DeleteExpired(ctx context.Context, now nostr.Timestamp) (int, error) {
	const batch = 256
	total := 0
	for {
		var keys [][]byte
		err := s.db.View(func(txn *kv.Txn) error {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{prefixExpiry}})
			defer it.Close()
			for it.Rewind(); it.Valid() && len(keys) < batch; it.Next() {
				k := it.Item().Key()
				if nostr.Timestamp(binary.BigEndian.Uint64(k[1:])) > now {
					break
				}
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return total, err
		}
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			var deleted bool
			err := s.update(deleteCost, func(txn *kv.Txn) (err error) {
				if deleted, err = s.deleteTxn(txn, k[9:]); err == nil && !deleted {
					err = txn.Delete(k) // an expiry key without its event: never loop on it
				}
				return err
			})
			if err != nil {
				return total, err
			}
			if deleted {
				total++
			}
		}
	}
}

// SweepExpired runs DeleteExpired every interval (and once at the start)
// until ctx ends.
func (s *Store) SweepExpired(ctx context.Context, every time.Duration) {
	tick.Now(ctx, every, func() bool {
		n, err := s.DeleteExpired(ctx, nostr.Timestamp(s.now().Unix()))
		switch {
		case errors.As(err, new(refusal)):
			// The gate has said why (once); the next sweep tries again.
		case err != nil && ctx.Err() == nil:
			s.log.Error("deleting expired events failed", "err", err)
		case n > 0:
			s.log.Info("expired events deleted", "events", n)
		}
		return true
	})
}
