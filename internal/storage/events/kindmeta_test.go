package events

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// notificationsStore holds, for one pubkey, a reply and a reaction naming
// it and a contact list following it, whose stored value is then made
// unreadable: a query that reads it fails, so whether a query read it shows.
func notificationsStore(t *testing.T) (s *Store, me string, reply, reaction *nostr.Event) {
	t.Helper()
	s = testStore(t, time.Unix(1_700_000_100, 0))
	me = testPubs[0]
	reply = mkEvent(testPubs[1], 1, 1_700_000_010, "hi", nostr.Tag{"p", me})
	reaction = mkEvent(testPubs[2], 7, 1_700_000_020, "+", nostr.Tag{"p", me})
	follows := mkEvent(testPubs[3], 3, 1_700_000_030, "", nostr.Tag{"p", me}, nostr.Tag{"p", testPubs[1]})
	for _, ev := range []*nostr.Event{reply, reaction, follows} {
		mustSave(t, s, ev)
	}
	if err := s.db.Update(func(txn *kv.Txn) error { return txn.Set(eventKey(mustTail(follows)), []byte{0xEE}) }); err != nil {
		t.Fatal(err)
	}
	s.Cache(1 << 20) // a fresh cache: the contact list's value is not in it
	return s, me, reply, reaction
}

// A scan of a tag range for some kinds passes over the events of other
// kinds without reading them: here, a contact list among a pubkey's
// mentions, which a notifications query for replies and reactions does
// not read.
func TestScanPassesOverOtherKindsUnread(t *testing.T) {
	t.Parallel()
	s, me, reply, reaction := notificationsStore(t)
	notifications := nostr.Filter{Tags: nostr.TagMap{"p": {me}}, Kinds: []int{1, 6, 7, 9735}, Limit: 100}
	if got := queryIDs(t, s, notifications); !slices.Equal(got, []string{reaction.ID, reply.ID}) {
		t.Fatalf("notifications: %v", got)
	}
	n, err := s.Count(context.Background(), []nostr.Filter{notifications}, nil)
	if err != nil || n != 2 {
		t.Fatalf("count: %d, %v", n, err)
	}
	// The same range without kinds reads the contact list, and fails on it:
	// what the query above passed over, unread.
	err = s.Query(context.Background(), nostr.Filter{Tags: nostr.TagMap{"p": {me}}}, nil, func(Meta, []byte) bool { return true })
	if err == nil {
		t.Fatal("a query reading the damaged contact list did not fail")
	}
}

// Index keys written before flagKind carry no kind: their events are read
// and checked, as before.
func TestKeysWithoutKindAreRead(t *testing.T) {
	t.Parallel()
	s, me, _, _ := notificationsStore(t)
	stripKinds(t, s.db, 1)
	err := s.Query(context.Background(), nostr.Filter{Tags: nostr.TagMap{"p": {me}}, Kinds: []int{1, 7}}, nil, func(Meta, []byte) bool { return true })
	if err == nil {
		t.Fatal("the damaged contact list was passed over by a key without its kind")
	}
}

// Kinds whose hashes collide are told apart by the event itself.
func TestKindHashCollision(t *testing.T) {
	t.Parallel()
	other := -1
	for k := 2; k <= 0xFFFF; k++ {
		if kindMeta(uint16(k)) == kindMeta(1) {
			other = k
			break
		}
	}
	if other < 0 {
		t.Fatal("no kind shares kind 1's hash")
	}
	s := testStore(t, time.Unix(1_700_000_100, 0))
	note := mkEvent(testPubs[0], 1, 1_700_000_010, "note", nostr.Tag{"t", "x"})
	odd := mkEvent(testPubs[0], other, 1_700_000_020, "odd", nostr.Tag{"t", "x"})
	mustSave(t, s, note)
	mustSave(t, s, odd)
	for kind, want := range map[int]string{1: note.ID, other: odd.ID} {
		if got := queryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"x"}}, Kinds: []int{kind}}); !slices.Equal(got, []string{want}) {
			t.Fatalf("kind %d: %v, want [%s]", kind, got, want)
		}
	}
}

// stripKinds clears flagKind from every n-th index key (0x42–0x45), as
// outpost wrote them before it.
func stripKinds(t testing.TB, db *kv.DB, n int) {
	t.Helper()
	var keys [][]byte
	var metas []byte
	if err := db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{})
		defer it.Close()
		for it.Seek([]byte{prefixKind}); it.Valid() && it.Item().Key()[0] <= prefixTag; it.Next() {
			keys, metas = append(keys, it.Item().KeyCopy(nil)), append(metas, it.Item().Meta())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for start := 0; start < len(keys); start += 256 {
		if err := db.Update(func(txn *kv.Txn) error {
			for i := start; i < min(start+256, len(keys)); i++ {
				if i%n == 0 {
					if err := txn.SetMeta(keys[i], nil, metas[i]&flagExpires); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
