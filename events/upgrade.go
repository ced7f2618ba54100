package events

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/kv"
)

// formatVersion is the version of the key layout this code writes:
//
//	1 (no format key)  events keyed by id, without deletion keys
//	2                  deletion keys (NIP-09 tombstones)
//	3                  events keyed by ts and id (in time order)
const formatVersion = 3

var formatKey = []byte{prefixFormat}

const (
	// upgradeBatch is how many events or deletion requests upgrade reads
	// at once, and moveBytes how many bytes of events at most: well within
	// what one transaction may hold.
	upgradeBatch = 256
	moveBytes    = 1 << 20
)

// upgrade brings the data written by an older outpost to formatVersion.
// Each step is idempotent, and the format key is written after them all: a
// step cut short (a crash, kill -9, ctx ending) runs again at the next Open,
// passing over what it did. A store of a newer format is refused rather
// than written in a layout it does not follow.
func (s *Store) upgrade(ctx context.Context) error {
	version := 1
	err := s.db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(formatKey)
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 1 {
				return fmt.Errorf("format key holds %x", v)
			}
			version = int(v[0])
			return nil
		})
	})
	switch {
	case err != nil:
		return fmt.Errorf("read the event store's format: %w", err)
	case version > formatVersion:
		return fmt.Errorf("the event store's format %d is newer than this outpost's (%d): run a newer outpost", version, formatVersion)
	case version == formatVersion:
		return nil
	}
	if err := s.moveEvents(ctx); err != nil {
		return fmt.Errorf("store events in time order: %w", err)
	}
	if err := s.readdress(ctx); err != nil {
		return fmt.Errorf("point address keys at events in time order: %w", err)
	}
	if version < 2 {
		if err := s.writeTombstones(ctx); err != nil {
			return fmt.Errorf("write the tombstones of stored deletion requests: %w", err)
		}
	}
	return s.db.Record(func(txn *kv.Txn) error { return txn.Set(formatKey, []byte{formatVersion}) })
}

// moveEvents stores the events that format 2 kept at their id under their
// ts and id (format 3), a batch per transaction. Each event's value goes to
// the key of its entry in format 2's time index, 0x41 ts id (which had no
// value), and its id key keeps only the ts: 8 bytes, which a re-run passes
// over. An event whose header cannot be read stays where it is, and is
// logged.
func (s *Store) moveEvents(ctx context.Context) error {
	type stored struct{ id, val []byte }
	seek := []byte{prefixID}
	moved, unreadable := 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var batch []stored
		size := 0
		err := s.db.View(func(txn *kv.Txn) error {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{prefixID}})
			defer it.Close()
			for it.Seek(seek); it.Valid() && len(batch) < upgradeBatch && size < moveBytes; it.Next() {
				item := it.Item()
				k := item.KeyCopy(nil)
				seek = append(k, 0) // the smallest key after this one
				if item.ValueSize() == 8 {
					continue // an id key: moved
				}
				val, err := item.ValueCopy(nil)
				if err != nil {
					return err
				}
				batch = append(batch, stored{k[1:], val})
				size += len(val)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		var n, bad int
		err = s.update(size+len(batch)*(tailLen+8+2*entryOverhead), func(txn *kv.Txn) error {
			n, bad = 0, 0
			for _, e := range batch {
				m, err := meta(e.id, e.val)
				if err != nil {
					bad++
					continue
				}
				d := decodedEvent{id: m.ID, pubkey: m.PubKey, kind: uint16(m.Kind), createdAt: m.CreatedAt, expiration: m.Expiration}
				tail := d.tail()
				if err := txn.SetMeta(eventKey(tail), e.val, d.keyMeta()); err != nil {
					return err
				}
				if err := txn.Set(idKey(e.id), tail[:8]); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if moved/100_000 != (moved+n)/100_000 {
			s.log.Info("storing events in time order", "moved", moved+n)
		}
		moved, unreadable = moved+n, unreadable+bad
	}
	if unreadable > 0 {
		s.log.Error("stored events are unreadable: they stay stored by id, and no filter finds them", "events", unreadable)
	}
	if moved > 0 || unreadable > 0 {
		s.log.Info("events stored in time order", "moved", moved, "unreadable", unreadable)
	}
	return nil
}

// readdress rewrites each address key that names an event by its id alone
// (format 2) to its ts and id, and deletes one that names no stored event.
func (s *Store) readdress(ctx context.Context) error {
	seek := []byte{prefixAddress}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		type address struct{ key, id []byte }
		var batch []address
		err := s.db.View(func(txn *kv.Txn) error {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{prefixAddress}})
			defer it.Close()
			for it.Seek(seek); it.Valid() && len(batch) < upgradeBatch; it.Next() {
				item := it.Item()
				k := item.KeyCopy(nil)
				seek = append(k, 0)
				if item.ValueSize() == tailLen {
					continue
				}
				id, err := item.ValueCopy(nil)
				if err != nil {
					return err
				}
				batch = append(batch, address{k, id})
			}
			return nil
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		err = s.update(len(batch)*(tailLen+entryOverhead), func(txn *kv.Txn) error {
			for _, a := range batch {
				var tail []byte
				if len(a.id) == 32 {
					var err error
					if tail, err = findTail(txn, a.id); err != nil {
						return err
					}
				}
				if tail == nil {
					if err := txn.Delete(a.key); err != nil {
						return err
					}
				} else if err := txn.Set(a.key, tail); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// writeTombstones lists every stored deletion request under the ids it
// names (format 1 to 2), in format 3's layout, one request per transaction:
// a request's tombstones are fewer keys than its own save wrote, so they
// always fit.
func (s *Store) writeTombstones(ctx context.Context) error {
	prefix := binary.BigEndian.AppendUint16([]byte{prefixKind}, uint16(nostr.KindDeletion))
	seek := prefix
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var tails [][]byte
		err := s.db.View(func(txn *kv.Txn) error {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Seek(seek); it.Valid() && len(tails) < upgradeBatch; it.Next() {
				k := it.Item().KeyCopy(nil)
				tails = append(tails, k[len(k)-tailLen:])
				seek = append(k, 0) // the smallest key after this one
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(tails) == 0 {
			break
		}
		for _, tail := range tails {
			err := s.update(0, func(txn *kv.Txn) error {
				item, err := txn.Get(eventKey(tail))
				if errors.Is(err, kv.ErrNotFound) {
					return nil // an index key without its event
				} else if err != nil {
					return err
				}
				return item.Value(func(val []byte) error {
					d, _, err := decodeStored(tail[8:], val)
					if err != nil {
						s.log.Error("a stored deletion request is unreadable: the events it names are not protected from being published again", "err", err)
						return nil
					}
					return addTombstones(txn, &d)
				})
			})
			if err != nil {
				return err
			}
		}
		total += len(tails)
	}
	if total > 0 {
		s.log.Info("tombstones written for the stored deletion requests", "requests", total)
	}
	return nil
}
