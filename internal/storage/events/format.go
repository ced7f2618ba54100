package events

import (
	"errors"
	"fmt"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// formatVersion is the key layout this code reads and writes (see the
// package documentation), the one of outpost's first release. Earlier
// layouts (development builds' formats 1 and 2, eventstore v0.17.8's) are
// not upgraded in place: a database in any other is refused.
const formatVersion = 3

var formatKey = []byte{prefixFormat}

// FormatError is Open's answer for a database holding events in a layout
// other than formatVersion's.
type FormatError struct {
	Found string // the layout found: "eventstore v0.17.8's layout", "the event store's format 2"
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("the database holds events in %s, not in format %d", e.Found, formatVersion)
}

// eventstore v0.17.8's badger backend kept its events and indexes under key
// prefixes 0 to 8 and its layout version at 255: a database it wrote has a
// key below outpost's first prefix or at that one.
const eventstoreVersionKey byte = 0xFF

// checkFormat reads the store's format key, writing it into a database that
// holds no events yet, and refuses one whose events are in another layout.
// It writes nothing else and changes nothing in a database it refuses.
func (s *Store) checkFormat() error {
	version, events, eventstore, err := s.readFormat()
	switch {
	case err != nil:
		return fmt.Errorf("read the event store's format: %w", err)
	case eventstore:
		return &FormatError{Found: "eventstore v0.17.8's layout"}
	case version == formatVersion:
		return nil
	case version != 0:
		return &FormatError{Found: fmt.Sprintf("the event store's format %d", version)}
	case events:
		return &FormatError{Found: "the event store's format 1"} // which had no format key
	}
	return s.db.Record(func(txn *kv.Txn) error { return txn.Set(formatKey, []byte{formatVersion}) })
}

// readFormat reads the format key (0: none), whether there are keys of
// events or indexes, and whether there are eventstore's.
func (s *Store) readFormat() (version int, events, eventstore bool, err error) {
	err = s.db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{})
		it.Rewind()
		eventstore = it.Valid() && it.Item().Key()[0] < kv.PrefixEventsFirst
		it.Seek([]byte{eventstoreVersionKey})
		eventstore = eventstore || it.Valid()
		it.Seek([]byte{kv.PrefixEventsFirst})
		events = it.Valid() && it.Item().Key()[0] < prefixFormat
		it.Close()
		item, err := txn.Get(formatKey)
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 1 || v[0] == 0 {
				return fmt.Errorf("format key holds %x", v)
			}
			version = int(v[0])
			return nil
		})
	})
	return version, events, eventstore, err
}
