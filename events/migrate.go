package events

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/kv"
)

// eventstore v0.17.8's badger backend kept events under key prefix 0 (a
// 4-byte serial, the event in its binary form, whose first 32 bytes are the
// id), indexes under 1 to 8 and its layout version at key 255.
const (
	oldEventPrefix     byte = 0
	oldLastIndexPrefix byte = 8
	oldVersionKey      byte = 255
	migrateBatch            = 500
)

// migrate moves events from eventstore's layout into this store's. The old
// events are read back with eventstore's own backend, saved here (a re-run
// finds the ones saved before as duplicates), counted, and only when every
// one is accounted for are the old keys deleted, the events first, so that a
// crash at any point leaves every event readable in one layout or the other.
func (s *Store) migrate(stop context.Context) error {
	if !s.anyKey([]byte{oldEventPrefix}) {
		return s.dropOldIndexes()
	}
	s.log.Info("moving events from eventstore's layout into outpost's")
	ctx := context.Background() // a batch begun is finished: stop is looked at between two
	var total, stored, duplicate, superseded, failed int
	var seek []byte
	for {
		if err := stop.Err(); err != nil {
			return err
		}
		ids, next, unreadable, err := s.oldIDs(seek)
		if err != nil {
			return err
		}
		failed += unreadable
		total += unreadable
		if len(ids) == 0 {
			break
		}
		seek = next
		total += len(ids)
		got := s.readOld(ctx, ids)
		for _, id := range ids {
			ev := got[id]
			if ev == nil {
				ev = s.readOld(ctx, []string{id})[id]
			}
			if ev == nil {
				s.log.Error("event in eventstore's layout could not be read", "id", id)
				failed++
				continue
			}
			out, err := s.Save(ctx, ev)
			if err != nil {
				s.log.Error("event in eventstore's layout could not be saved", "id", id, "err", err)
				failed++
				continue
			}
			switch out {
			case Stored:
				stored++
			case Duplicate:
				duplicate++
			case Superseded:
				superseded++
			}
		}
	}
	log := s.log.With("events", total, "stored", stored, "already_moved", duplicate,
		"superseded_by_newer_version", superseded, "failed", failed)
	if failed > 0 || stored+duplicate+superseded != total {
		log.Error("events left in eventstore's layout: they are not served until moved; outpost retries at the next start")
		return nil
	}
	if err := s.db.DropPrefix([]byte{oldEventPrefix}); err != nil {
		return fmt.Errorf("delete moved events: %w", err)
	}
	log.Info("events moved from eventstore's layout")
	return s.dropOldIndexes()
}

// oldIDs reads the ids of up to migrateBatch old events from seek on, and the
// key to continue from. unreadable counts values too short to hold an id.
func (s *Store) oldIDs(seek []byte) (ids []string, next []byte, unreadable int, err error) {
	err = s.db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{oldEventPrefix}})
		defer it.Close()
		if seek == nil {
			seek = []byte{oldEventPrefix}
		}
		for it.Seek(seek); it.Valid() && len(ids) < migrateBatch; it.Next() {
			item := it.Item()
			next = append(item.KeyCopy(nil), 0) // the smallest key after this one
			if err := item.Value(func(val []byte) error {
				if len(val) < 32 {
					s.log.Error("event in eventstore's layout has no id", "key", fmt.Sprintf("%x", item.Key()))
					unreadable++
					return nil
				}
				ids = append(ids, hex.EncodeToString(val[:32]))
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return ids, next, unreadable, err
}

// readOld reads events by id with eventstore's backend, keeping those whose
// full id is one asked for (its index only holds 8 bytes of each).
func (s *Store) readOld(ctx context.Context, ids []string) map[string]*nostr.Event {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]*nostr.Event{}
	ch, err := s.db.QueryEventstore(ctx, nostr.Filter{IDs: ids, Limit: len(ids)}, migrateBatch)
	if err != nil {
		return got
	}
	for ev := range ch {
		if want[ev.ID] {
			got[ev.ID] = ev
		}
	}
	return got
}

// dropOldIndexes deletes what is left of eventstore's layout once its events
// are gone: its indexes and its version key.
func (s *Store) dropOldIndexes() error {
	var prefixes [][]byte
	for p := oldEventPrefix + 1; p <= oldLastIndexPrefix; p++ {
		prefixes = append(prefixes, []byte{p})
	}
	prefixes = append(prefixes, []byte{oldVersionKey})
	var present [][]byte
	for _, p := range prefixes {
		if s.anyKey(p) {
			present = append(present, p)
		}
	}
	if len(present) == 0 {
		return nil
	}
	if err := s.db.DropPrefix(present...); err != nil {
		return fmt.Errorf("delete eventstore's indexes: %w", err)
	}
	return nil
}

// anyKey reports whether a key starts with prefix.
func (s *Store) anyKey(prefix []byte) bool {
	found := false
	s.db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
		defer it.Close()
		it.Rewind()
		found = it.Valid()
		return nil
	})
	return found
}
