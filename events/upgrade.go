package events

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/kv"
)

// formatVersion is the version of the key layout this code writes:
//
//	1 (no format key)  the layout without deletion keys
//	2                  deletion keys (NIP-09 tombstones)
const formatVersion = 2

var formatKey = []byte{prefixFormat}

// upgradeBatch is how many deletion requests upgrade reads at once.
const upgradeBatch = 256

// upgrade brings the data written by an older outpost to formatVersion. Each
// step only adds keys that can be derived from the stored events and is
// idempotent, and the format key is written after it: a step cut short (a
// crash, kill -9) runs again, whole, at the next Open. A store of a newer
// format is refused rather than written in a layout it does not follow.
func (s *Store) upgrade() error {
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
	if err := s.writeTombstones(); err != nil {
		return fmt.Errorf("write the tombstones of stored deletion requests: %w", err)
	}
	return s.db.Record(func(txn *kv.Txn) error { return txn.Set(formatKey, []byte{formatVersion}) })
}

// writeTombstones lists every stored deletion request under the ids it
// names (format 1 to 2), one request per transaction: a request's
// tombstones are fewer keys than its own save wrote, so they always fit.
func (s *Store) writeTombstones() error {
	prefix := binary.BigEndian.AppendUint16([]byte{prefixKind}, uint16(nostr.KindDeletion))
	seek := prefix
	total := 0
	for {
		var ids [][]byte
		err := s.db.View(func(txn *kv.Txn) error {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Seek(seek); it.Valid() && len(ids) < upgradeBatch; it.Next() {
				k := it.Item().KeyCopy(nil)
				ids = append(ids, k[len(k)-32:])
				seek = append(k, 0) // the smallest key after this one
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			err := s.update(0, func(txn *kv.Txn) error {
				item, err := txn.Get(eventKey(id))
				if errors.Is(err, kv.ErrNotFound) {
					return nil // an index key without its event
				} else if err != nil {
					return err
				}
				return item.Value(func(val []byte) error {
					d, _, err := decodeStored(id, val)
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
		total += len(ids)
	}
	if total > 0 {
		s.log.Info("tombstones written for the stored deletion requests", "requests", total)
	}
	return nil
}
