package events

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/kv"
)

// toFormat2 rewrites the events of db into the layout outpost's format 2
// kept them in: each event's value at 0x40 id, its key 0x41 ts id (the time
// index) with no value, its address key holding its id, and the format key
// 2. Every other key was the same.
func toFormat2(t testing.TB, db *kv.DB) {
	t.Helper()
	type stored struct {
		key, val []byte
		meta     byte
	}
	var events, addrs []stored
	if err := db.View(func(txn *kv.Txn) error {
		for _, p := range []byte{prefixEvent, prefixAddress} {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{p}})
			for it.Rewind(); it.Valid(); it.Next() {
				val, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				e := stored{it.Item().KeyCopy(nil), val, it.Item().Meta()}
				if p == prefixEvent {
					events = append(events, e)
				} else {
					addrs = append(addrs, e)
				}
			}
			it.Close()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for start := 0; start < len(events) || start < len(addrs); start += 128 {
		if err := db.Update(func(txn *kv.Txn) error {
			for _, e := range events[min(start, len(events)):min(start+128, len(events))] {
				if err := txn.Set(append([]byte{prefixID}, e.key[9:]...), e.val); err != nil {
					return err
				}
				if err := txn.SetMeta(e.key, nil, e.meta); err != nil {
					return err
				}
			}
			for _, a := range addrs[min(start, len(addrs)):min(start+128, len(addrs))] {
				if err := txn.Set(a.key, a.val[8:]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Update(func(txn *kv.Txn) error { return txn.Set(formatKey, []byte{2}) }); err != nil {
		t.Fatal(err)
	}
}

// checkFormat3 checks that no key of db is left in format 2's layout.
func checkFormat3(t testing.TB, db *kv.DB) {
	t.Helper()
	if err := db.View(func(txn *kv.Txn) error {
		sizes := map[byte]int64{prefixID: 8, prefixAddress: tailLen}
		for p, size := range sizes {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{p}})
			for it.Rewind(); it.Valid(); it.Next() {
				if got := it.Item().ValueSize(); got != size {
					t.Errorf("key %x holds %d bytes, want %d", it.Item().Key(), got, size)
				}
			}
			it.Close()
		}
		it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{prefixEvent}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if it.Item().ValueSize() < headerLen || it.Item().Meta()&flagKind == 0 {
				t.Errorf("event key %x: %d bytes, meta %x", it.Item().Key(), it.Item().ValueSize(), it.Item().Meta())
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v := formatOf(t, db); v != formatVersion {
		t.Errorf("format %d, want %d", v, formatVersion)
	}
}

// formatOf is the format db's format key holds.
func formatOf(t testing.TB, db *kv.DB) int {
	t.Helper()
	var v []byte
	err := db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(formatKey)
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	if err != nil || len(v) != 1 {
		t.Fatalf("format key: %x, %v", v, err)
	}
	return int(v[0])
}

// A store of format 2 is brought to format 3 at Open and answers every
// query as before: the model check, with the store rewritten in format 2
// and opened again halfway (see checkAgainstModel).
func TestUpgradeToTimeOrderMatchesTheModel(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkAgainstModel(t, seed, 200, 120, modelFormat2) })
	}
}

// A move into time order killed at any moment (kill -9) is finished by the
// next Open, and every event is where format 3 keeps it.
func TestUpgradeToTimeOrderSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	s, db := openAt(t, dir)
	for i := range 40_000 {
		pk := testPubs[i%len(testPubs)]
		var ev *nostr.Event
		switch i % 4 {
		case 0:
			ev = mkEvent(pk, 30023, nostr.Timestamp(1_700_000_000+i), "article", nostr.Tag{"d", fmt.Sprint(i % 1000)})
		default:
			ev = mkEvent(pk, 1, nostr.Timestamp(1_700_000_000+i), fmt.Sprint("note ", i), nostr.Tag{"p", testPubs[(i+1)%len(testPubs)]})
		}
		mustSave(t, s, ev)
	}
	want, wantAddrs := queryIDs(t, s, nostr.Filter{}), addresses(t, s)
	toFormat2(t, db)
	db.Close()
	killOpens(t, dir, 500*time.Millisecond, func(db *kv.DB) string {
		return fmt.Sprintf("%d of %d events moved", movedEvents(t, db), countKeys(t, db, prefixID))
	})
	s, db = openAt(t, dir)
	defer db.Close()
	checkFormat3(t, db)
	if got := queryIDs(t, s, nostr.Filter{}); !slices.Equal(got, want) {
		t.Fatalf("%d events after the kills, want %d", len(got), len(want))
	}
	for _, id := range want[:100] {
		if got := queryIDs(t, s, nostr.Filter{IDs: []string{id}}); len(got) != 1 {
			t.Fatalf("event %s not found by id", id)
		}
	}
	if got := addresses(t, s); !maps.Equal(got, wantAddrs) {
		t.Fatalf("%d addresses hold an event after the kills, want %d", len(got), len(wantAddrs))
	}
}

// movedEvents counts the events of db stored in time order: their id keys
// hold only their time.
func movedEvents(t testing.TB, db *kv.DB) int {
	t.Helper()
	moved := 0
	err := db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{prefixID}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if it.Item().ValueSize() == 8 {
				moved++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return moved
}

// stopsAfter is a context that ends at its look (Err) after the first n,
// so that a move stops between two batches chosen by the test.
type stopsAfter struct {
	context.Context
	n, looks int
}

func (c *stopsAfter) Err() error {
	if c.looks++; c.looks > c.n {
		return context.Canceled
	}
	return nil
}

// A move into time order stops between two batches once Open's context
// ends, with Open returning the context's error and the format left as it
// was; the next Open finishes it, and every event and address is as before.
func TestUpgradeToTimeOrderStopsWhenAsked(t *testing.T) {
	dir := t.TempDir()
	s, db := openAt(t, dir)
	for i := range 5 * upgradeBatch {
		pk := testPubs[i%len(testPubs)]
		ev := mkEvent(pk, 1, nostr.Timestamp(1_700_000_000+i), fmt.Sprint("note ", i))
		if i%5 == 0 {
			ev = mkEvent(pk, 30023, nostr.Timestamp(1_700_000_000+i), "article", nostr.Tag{"d", fmt.Sprint(i % 100)})
		}
		mustSave(t, s, ev)
	}
	want, wantAddrs := queryIDs(t, s, nostr.Filter{}), addresses(t, s)
	events := len(want) // fewer than saved: articles replace one another
	if events <= 4*upgradeBatch || events > 5*upgradeBatch {
		t.Fatalf("%d events stored: the stops below want five batches", events)
	}
	toFormat2(t, db)
	defer db.Close()
	// Before the first batch; after two; after the last three and the look
	// that finds no more, at readdress's first.
	for _, stop := range []struct{ looks, moved int }{{0, 0}, {2, 2 * upgradeBatch}, {4, events}} {
		_, err := Open(&stopsAfter{Context: context.Background(), n: stop.looks}, db, quiet())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped after %d looks: Open returned %v, want context.Canceled", stop.looks, err)
		}
		if v := formatOf(t, db); v != 2 {
			t.Fatalf("stopped after %d looks: format %d, want 2 until the move is done", stop.looks, v)
		}
		if moved := movedEvents(t, db); moved != stop.moved {
			t.Fatalf("stopped after %d looks: %d events moved, want %d", stop.looks, moved, stop.moved)
		}
	}
	s, err := Open(context.Background(), db, quiet())
	if err != nil {
		t.Fatal(err)
	}
	checkFormat3(t, db)
	if got := queryIDs(t, s, nostr.Filter{}); !slices.Equal(got, want) {
		t.Fatalf("%d events after the stops, want %d", len(got), len(want))
	}
	if got := addresses(t, s); !maps.Equal(got, wantAddrs) {
		t.Fatalf("%d addresses hold an event after the stops, want %d", len(got), len(wantAddrs))
	}
}

// addresses are the ids of the events at the addresses of kind 30023 that
// TestUpgradeToTimeOrderSurvivesKill writes.
func addresses(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pk := range testPubs {
		for d := range 1000 {
			ev, err := s.Address(context.Background(), 30023, pk, fmt.Sprint(d))
			if err != nil {
				t.Fatal(err)
			}
			if ev != nil {
				out[pk+fmt.Sprint(d)] = ev.ID
			}
		}
	}
	return out
}

// An event of format 2 whose header cannot be read stays where it was, and
// an address key naming no stored event, or that one, is dropped; the rest
// moves.
func TestUpgradeToTimeOrderKeepsWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	s, db := openAt(t, dir)
	note := mkEvent(testPubs[0], 1, 1_700_000_000, "kept")
	profile := mkEvent(testPubs[1], 0, 1_700_000_001, "{}")
	mustSave(t, s, note)
	mustSave(t, s, profile)
	toFormat2(t, db)
	garbage := append([]byte{prefixID}, make([]byte, 32)...)
	dangling := addressKey(10002, mustID(&nostr.Event{ID: testPubs[2]}), "")
	unreadable := addressKey(3, mustID(&nostr.Event{ID: testPubs[2]}), "") // names the garbage
	if err := db.Update(func(txn *kv.Txn) error {
		if err := txn.Set(garbage, []byte("\x07 not an event header at all, and long enough to look like one")); err != nil {
			return err
		}
		if err := txn.Set(unreadable, garbage[1:]); err != nil {
			return err
		}
		return txn.Set(dangling, mustID(&nostr.Event{ID: testPubs[3]}))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, db = openAt(t, dir)
	defer db.Close()
	if got := queryIDs(t, s, nostr.Filter{}); !slices.Equal(got, []string{profile.ID, note.ID}) {
		t.Fatalf("events after the upgrade: %v", got)
	}
	if ev, err := s.Address(context.Background(), 0, testPubs[1], ""); err != nil || ev == nil || ev.ID != profile.ID {
		t.Fatalf("the profile's address holds %v, %v", ev, err)
	}
	db.View(func(txn *kv.Txn) error {
		if item, err := txn.Get(garbage); err != nil || item.ValueSize() < headerLen {
			t.Errorf("the unreadable event: %v", err)
		}
		for _, k := range [][]byte{dangling, unreadable} {
			if _, err := txn.Get(k); err != kv.ErrNotFound {
				t.Errorf("the address key %x naming no readable event: %v", k, err)
			}
		}
		return nil
	})
}

// A move into time order on a disk below the free space kept stops with the
// free-space error and loses nothing; once there is room, the next Open
// makes it. (A move cut short halfway is TestUpgradeToTimeOrderSurvivesKill.)
// The store of format 2 is written on an ordinary disk and copied onto a
// small one, so that the move alone meets the full disk.
func TestUpgradeToTimeOrderOnAFullDisk(t *testing.T) {
	src := t.TempDir()
	s, db := openAt(t, src)
	for i := range 5000 {
		mustSave(t, s, mkEvent(testPubs[i%len(testPubs)], 1, nostr.Timestamp(1_700_000_000+i), strings.Repeat("x", 2000)+fmt.Sprint(i)))
	}
	want := queryIDs(t, s, nostr.Filter{})
	toFormat2(t, db)
	db.Close()

	disk := testkit.NewFullDisk(t)
	if err := os.CopyFS(disk.Dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	db, err := kv.Settings{MinFreeSpace: disk.Min}.Open(disk.Dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	filler := disk.FillPastMin(t, func() bool { return !db.Writable() })
	if _, err := Open(context.Background(), db, quiet()); !errors.Is(err, kv.ErrStorageFull) {
		t.Fatalf("Open on a full disk: %v, want kv.ErrStorageFull", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !db.Writable() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if s, err = Open(context.Background(), db, quiet()); err != nil {
		t.Fatalf("Open with room again: %v", err)
	}
	checkFormat3(t, db)
	if got := queryIDs(t, s, nostr.Filter{}); !slices.Equal(got, want) {
		t.Fatalf("%d events after the full disk, want %d", len(got), len(want))
	}
}
