package events

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	bbackend "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/kv"
)

// oldStore writes events into dir with eventstore v0.17.8's badger backend,
// as outpost did before it had its own store, and returns the ids a relay
// holds afterwards (the newest of two versions of one address).
func oldStore(t *testing.T, dir string) (want []string) {
	t.Helper()
	old := &bbackend.BadgerBackend{Path: filepath.Join(dir, "badger"), BadgerOptionsModifier: func(o badger.Options) badger.Options { return o.WithLogger(nil) }}
	if err := old.Init(); err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ctx := context.Background()
	pk := testPubs[0]
	var evs []*nostr.Event
	for i := range 1200 { // more than one batch
		evs = append(evs, mkEvent(testPubs[i%3], 1, nostr.Timestamp(1_700_000_000+i/7), "note "+strconv.Itoa(i), nostr.Tag{"t", "abc"}, nostr.Tag{"e", testPubs[3]}))
	}
	evs = append(evs,
		mkEvent(pk, 0, 1_700_000_100, `{"name":"alice"}`),
		mkEvent(pk, 3, 1_700_000_100, "", nostr.Tag{"p", testPubs[1]}),
		mkEvent(pk, 10002, 1_700_000_100, "", nostr.Tag{"r", "wss://relay.example"}),
		mkEvent(pk, 30000, 1_700_000_100, "", nostr.Tag{"d", "friends"}, nostr.Tag{"p", testPubs[1]}),
		mkEvent(pk, 30000, 1_700_000_101, "", nostr.Tag{"d", "muted"}),
		mkEvent(pk, 38000, 1_700_000_102, "[5/5]", nostr.Tag{"k", "38172"}, nostr.Tag{"d", testPubs[2]}, nostr.Tag{"u", "https://mint.example"}),
		mkEvent(pk, 1984, 1_700_000_103, "spam", nostr.Tag{"p", testPubs[1], "spam"}),
		mkEvent(pk, 1, 1_700_000_104, strings.Repeat("long ", 10_000), nostr.Tag{"t", strings.Repeat("x", 150)}),
		mkEvent(pk, 5, 1_700_000_105, "", nostr.Tag{"e", evs[0].ID}), // NIP-09: evs[0] is pk's
	)
	for _, ev := range evs {
		if err := old.SaveEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.ID)
	}
	// Two versions of one address, both kept by SaveEvent: only the newer
	// one belongs in a relay.
	older := mkEvent(pk, 30023, 1_700_000_200, "v1", nostr.Tag{"d", "post"})
	newer := mkEvent(pk, 30023, 1_700_000_201, "v2", nostr.Tag{"d", "post"})
	for _, ev := range []*nostr.Event{newer, older} {
		if err := old.SaveEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, newer.ID)
	slices.Sort(want)
	return want
}

// openOld makes a store in eventstore's layout in dir (see oldStore) and
// opens its database, moving nothing yet; want is its events' ids.
func openOld(t *testing.T, dir string) (db *kv.DB, want []string) {
	t.Helper()
	want = oldStore(t, dir)
	db, err := kv.Settings{}.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return db, want
}

// openAt opens the event store on the database in dir.
func openAt(t *testing.T, dir string) (*Store, *kv.DB) {
	t.Helper()
	db, err := kv.Settings{}.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), db, quiet())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return s, db
}

func allIDs(t *testing.T, s *Store) []string {
	t.Helper()
	ids := queryIDs(t, s, nostr.Filter{})
	slices.Sort(ids)
	return ids
}

// oldKeys counts keys in eventstore's layout.
func oldKeys(t *testing.T, db *kv.DB) int {
	t.Helper()
	n := 0
	db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); k[0] <= oldLastIndexPrefix || k[0] == oldVersionKey {
				n++
			}
		}
		return nil
	})
	return n
}

// openMoved opens the store at dir and checks that it holds exactly the
// events want, and no key of eventstore's layout.
func openMoved(t *testing.T, dir string, want []string, when string) (*Store, *kv.DB) {
	t.Helper()
	s, db := openAt(t, dir)
	if got := allIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("%s: %d events, want %d", when, len(got), len(want))
	}
	if n := oldKeys(t, db); n != 0 {
		t.Fatalf("%d keys of eventstore's layout left", n)
	}
	return s, db
}

func TestMigrationFromEventstore(t *testing.T) {
	dir := t.TempDir()
	want := oldStore(t, dir)

	s, db := openMoved(t, dir, want, "after the move")
	// Every event reads back as it was, and the indexes find them.
	ctx := context.Background()
	ch, _ := s.QueryEvents(ctx, nostr.Filter{Kinds: []int{30000}, Authors: []string{testPubs[0]}, Tags: nostr.TagMap{"d": {"friends"}}})
	var got []*nostr.Event
	for ev := range ch {
		got = append(got, ev)
	}
	if len(got) != 1 || !got[0].CheckID() || got[0].Tags.GetD() != "friends" {
		t.Fatalf("the friends list after the move: %v", got)
	}
	if n, _ := s.CountEvents(ctx, nostr.Filter{Tags: nostr.TagMap{"t": {"abc"}}}); n != 1200 {
		t.Fatalf("#t abc after the move: %d, want 1200", n)
	}
	first := mkEvent(testPubs[0], 1, 1_700_000_000, "note 0", nostr.Tag{"t", "abc"}, nostr.Tag{"e", testPubs[3]})
	if deleted, err := s.Deleted(ctx, first.ID, first.PubKey); err != nil || !deleted {
		t.Fatalf("the note deleted in eventstore's layout: deleted %v, %v", deleted, err)
	}
	db.Close()

	// Opening again moves nothing and loses nothing.
	s, db = openAt(t, dir)
	defer db.Close()
	if got := allIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("after reopening: %d events, want %d", len(got), len(want))
	}
}

// A move that stopped half way (a crash after some events were saved in the
// new layout and before any old key was deleted) is finished by the next
// Open, without duplicates.
func TestMigrationResumes(t *testing.T) {
	dir := t.TempDir()
	db, want := openOld(t, dir)
	half := &Store{db: db, log: quiet(), now: time.Now}
	ids, _, _, err := half.oldIDs(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range half.readOld(context.Background(), ids[:300]) {
		mustSave(t, half, ev)
	}
	db.Close()

	_, db = openMoved(t, dir, want, "after the resumed move")
	db.Close()
}

// A move out of eventstore's layout stops between two batches once Open's
// context ends, deleting no old key; the next Open finishes it.
func TestMigrationStopsWhenAsked(t *testing.T) {
	dir := t.TempDir()
	db, want := openOld(t, dir)
	// Three looks for upgrade's steps (nothing to do), one for the first batch.
	_, err := Open(&stopsAfter{Context: context.Background(), n: 4}, db, quiet())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open returned %v, want context.Canceled", err)
	}
	if moved := countKeys(t, db, prefixID); moved == 0 || moved >= len(want) {
		t.Fatalf("%d of %d events moved before the stop, want one batch", moved, len(want))
	}
	if n := oldKeys(t, db); n == 0 {
		t.Fatal("the old keys were deleted before the move was done")
	}
	db.Close()

	_, db = openMoved(t, dir, want, "after the stopped move")
	db.Close()
}

// When the old events are gone but their indexes are not (a crash between
// the two deletions), Open deletes the rest.
func TestMigrationDropsLeftoverIndexes(t *testing.T) {
	dir := t.TempDir()
	db, _ := openOld(t, dir)
	if err := db.DropPrefix([]byte{oldEventPrefix}); err != nil {
		t.Fatal(err)
	}
	if oldKeys(t, db) == 0 {
		t.Fatal("no index keys to leave over")
	}
	db.Close()
	_, db = openAt(t, dir)
	defer db.Close()
	if n := oldKeys(t, db); n != 0 {
		t.Fatalf("%d keys of eventstore's layout left", n)
	}
}

// An old event that cannot be read keeps the whole old layout in place: the
// others are moved, nothing is deleted, and the next Open tries again.
func TestMigrationKeepsWhatItCannotMove(t *testing.T) {
	dir := t.TempDir()
	db, want := openOld(t, dir)
	garbage := append([]byte{oldEventPrefix}, 0xFF, 0xFF, 0xFF, 0xF0)
	if err := db.Update(func(txn *kv.Txn) error {
		return txn.Set(garbage, []byte(strings.Repeat("\x07", 200)))
	}); err != nil {
		t.Fatal(err)
	}
	before := oldKeys(t, db)
	db.Close()

	for range 2 {
		s, db := openAt(t, dir)
		if got := allIDs(t, s); !slices.Equal(got, want) {
			t.Fatalf("readable events: %d, want %d", len(got), len(want))
		}
		if n := oldKeys(t, db); n != before {
			t.Fatalf("old keys: %d, want all %d kept", n, before)
		}
		db.Close()
	}
}

// A move killed at any moment (kill -9 of the process) loses nothing: the
// next Open finishes it. The child is this test binary, running
// TestMigrationChild on the same directory.
func TestMigrationSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	want := oldStore(t, dir)
	killOpens(t, dir, 500*time.Millisecond, func(db *kv.DB) string {
		return fmt.Sprintf("%d events moved, %d old keys left", countKeys(t, db, prefixEvent), oldKeys(t, db))
	})
	_, db := openMoved(t, dir, want, "after kills during the move")
	db.Close()
}

// killOpens runs TestMigrationChild (an Open of dir) and kills it (kill -9)
// after 5, 30, 80 and 200 ms and then up to last, logging what report says
// of the database each kill left.
func killOpens(t *testing.T, dir string, last time.Duration, report func(db *kv.DB) string) {
	t.Helper()
	for _, after := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond, 80 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 500 * time.Millisecond} {
		if after > last {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMigrationChild$")
		cmd.Env = append(os.Environ(), "OUTPOST_EVENTS_MIGRATE_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		cmd.Process.Kill()
		cmd.Wait()
		cancel()
		db, err := kv.Settings{}.Open(dir, quiet())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("killed after %v: %s", after, report(db))
		db.Close()
	}
}

// countKeys counts the keys under prefix.
func countKeys(t *testing.T, db *kv.DB, prefix byte) int {
	t.Helper()
	n := 0
	db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{prefix}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	return n
}

func TestMigrationChild(t *testing.T) {
	dir := os.Getenv("OUTPOST_EVENTS_MIGRATE_DIR")
	if dir == "" {
		t.Skip("run by TestMigrationSurvivesKill")
	}
	_, db := openAt(t, dir)
	db.Close()
}

// deletionStore writes into dir a store holding deletion requests as
// outpost wrote them before format 2: events keyed by id, without
// tombstones or a format key.
// It returns each deleted event with how many requests name it.
func deletionStore(t *testing.T, dir string, requests int) map[*nostr.Event]int {
	t.Helper()
	s, db := openAt(t, dir)
	defer db.Close()
	deleted := map[*nostr.Event]int{}
	var notes []*nostr.Event
	for i := range requests {
		pk := testPubs[i%3]
		note := mkEvent(pk, 1, nostr.Timestamp(1_700_000_000+i), "note "+strconv.Itoa(i))
		notes = append(notes, note)
		tags := nostr.Tags{{"e", note.ID}, {"e", testPubs[3]}, {"p", pk}}
		if i >= 3 { // name an earlier note of the same author again
			tags = append(tags, nostr.Tag{"e", notes[i-3].ID})
			deleted[notes[i-3]]++
		}
		deleted[note]++
		mustSave(t, s, mkEvent(pk, 5, nostr.Timestamp(1_700_000_000+i), "", tags...))
	}
	// A stranger's request counts for nothing.
	mustSave(t, s, mkEvent(testPubs[3], 5, 1_700_000_000, "", nostr.Tag{"e", notes[0].ID}))
	toFormat2(t, db)
	if err := db.DropPrefix([]byte{prefixDeletion}, []byte{prefixFormat}); err != nil {
		t.Fatal(err)
	}
	for note := range deleted {
		if mustDeleted(t, s, note) {
			t.Fatal("a tombstone survived DropPrefix")
		}
	}
	return deleted
}

// checkTombstones checks that every deleted note has exactly one tombstone
// entry per request naming it.
func checkTombstones(t *testing.T, s *Store, deleted map[*nostr.Event]int) {
	t.Helper()
	for note, n := range deleted {
		if !mustDeleted(t, s, note) {
			t.Fatalf("note %s is not deleted", note.ID)
		}
		var pk [32]byte
		parseHex32(note.PubKey, &pk)
		s.db.View(func(txn *kv.Txn) error {
			item, err := txn.Get(deletionKey(mustID(note), pk[:]))
			if err != nil {
				t.Fatal(err)
			}
			if size := item.ValueSize(); size != int64(n*tombstoneLen) {
				t.Fatalf("note %s: %d bytes of tombstones, want %d requests'", note.ID, size, n)
			}
			return nil
		})
	}
	// And the stranger's, and each author's for the id testPubs[3] (no event).
	if got, want := countKeys(t, s.db, prefixDeletion), len(deleted)+1+3; got != want {
		t.Fatalf("%d tombstone keys, want %d", got, want)
	}
}

// A store written before deletion tombstones gets them at Open, once.
func TestUpgradeWritesTombstones(t *testing.T) {
	dir := t.TempDir()
	deleted := deletionStore(t, dir, 700)
	for range 2 { // the second Open finds the store upgraded and writes nothing twice
		s, db := openAt(t, dir)
		checkTombstones(t, s, deleted)
		db.Close()
	}
}

// A store of a newer format than this code knows is not opened.
func TestNewerFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	_, db := openAt(t, dir)
	if err := db.Update(func(txn *kv.Txn) error { return txn.Set(formatKey, []byte{formatVersion + 1}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), db, quiet()); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer format: %v", err)
	}
	db.Close()
}

// An upgrade killed at any moment (kill -9) is finished by the next Open,
// with one tombstone entry per request, however often it was cut short.
func TestUpgradeSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	deleted := deletionStore(t, dir, 3000)
	killOpens(t, dir, 350*time.Millisecond, func(db *kv.DB) string {
		return fmt.Sprintf("%d tombstone keys", countKeys(t, db, prefixDeletion))
	})
	s, db := openAt(t, dir)
	defer db.Close()
	checkTombstones(t, s, deleted)
}
