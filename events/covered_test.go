package events

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/kv"
)

// eKeys lists the e tags' index keys with their values and user metas.
func eKeys(t testing.TB, db *kv.DB) (keys, vals [][]byte, metas []byte) {
	t.Helper()
	prefix := []byte{prefixTag, coveredTag}
	if err := db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			keys, vals, metas = append(keys, it.Item().KeyCopy(nil)), append(vals, v), append(metas, it.Item().Meta())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys, vals, metas
}

// uncover empties every n-th e tag index key, as outpost wrote them before
// format 3, and returns how many it emptied.
func uncover(t testing.TB, db *kv.DB, n int) int {
	t.Helper()
	keys, _, metas := eKeys(t, db)
	emptied := 0
	for start := 0; start < len(keys); start += 256 {
		if err := db.Update(func(txn *kv.Txn) error {
			for i := start; i < min(start+256, len(keys)); i++ {
				if i%n == 0 {
					if err := txn.SetMeta(keys[i], nil, metas[i]); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys {
		if i%n == 0 {
			emptied++
		}
	}
	return emptied
}

// checkCovered checks that every e tag index key holds its event's value or
// nothing, and nothing when the event is longer than maxCovered, and that
// no other index key holds anything. It counts the e keys that hold their
// event and those that could but do not.
func checkCovered(t testing.TB, db *kv.DB) (covered, uncovered int) {
	t.Helper()
	if err := db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{})
		defer it.Close()
		for it.Seek([]byte{prefixTime}); it.Valid() && it.Item().Key()[0] <= prefixTag; it.Next() {
			k := it.Item().Key()
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if k[0] != prefixTag || k[1] != coveredTag {
				if len(v) > 0 {
					t.Fatalf("index key %x holds %d bytes", k, len(v))
				}
				continue
			}
			item, err := txn.Get(eventKey(k[len(k)-32:]))
			if err != nil {
				return fmt.Errorf("the event of %x: %w", k, err)
			}
			ev, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			switch {
			case len(ev) > maxCovered && len(v) > 0:
				t.Fatalf("e key %x holds a copy of an event of %d bytes", k, len(ev))
			case len(v) > 0 && !bytes.Equal(v, ev):
				t.Fatalf("e key %x holds %q, want its event %q", k, v, ev)
			case len(v) > 0:
				covered++
			case len(ev) <= maxCovered:
				uncovered++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return covered, uncovered
}

func formatOf(t testing.TB, db *kv.DB) int {
	t.Helper()
	version := 1
	if err := db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(formatKey)
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		version = int(v[0])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return version
}

// A thread is read from its e tag's index keys: each holds its event, or
// nothing when the event is too long to copy; deleting an event takes its
// keys with it, and an expired one is not read out of its key.
func TestETagKeysHoldTheirEvents(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	s := testStore(t, now)
	root := mkEvent(testPubs[0], 1, 1_700_000_000, "root")
	mustSave(t, s, root)
	reply := mkEvent(testPubs[1], 1, 1_700_000_010, "reply",
		nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", root.ID, "", "reply"}, nostr.Tag{"p", root.PubKey})
	long := mkEvent(testPubs[2], 1, 1_700_000_020, strings.Repeat("long ", maxCovered/5), nostr.Tag{"e", root.ID})
	reaction := mkEvent(testPubs[2], 7, 1_700_000_030, "+", nostr.Tag{"e", reply.ID}, nostr.Tag{"e", root.ID})
	expired := mkEvent(testPubs[3], 7, 1_700_000_040, "+", nostr.Tag{"e", root.ID}, nostr.Tag{"expiration", "1700000050"})
	expiring := mkEvent(testPubs[3], 7, 1_700_000_041, "-", nostr.Tag{"e", root.ID}, nostr.Tag{"expiration", "1700009999"})
	for _, ev := range []*nostr.Event{reply, long, reaction, expired, expiring} {
		mustSave(t, s, ev)
	}
	if got, missing := checkCovered(t, s.db); got != 5 || missing != 0 { // reply (once for two tags), reaction twice, expired, expiring
		t.Fatalf("%d e keys hold their event and %d do not, want 5 and 0", got, missing)
	}
	thread := nostr.Filter{Tags: nostr.TagMap{"e": {root.ID}}, Kinds: []int{1, 7}, Limit: 500}
	want := []string{expiring.ID, reaction.ID, long.ID, reply.ID}
	if got := queryIDs(t, s, thread); !slices.Equal(got, want) {
		t.Fatalf("thread: got %v, want %v", got, want)
	}
	// The value a key yields is its event's whole JSON.
	var got []*nostr.Event
	if err := s.Query(context.Background(), thread, nil, func(_ Meta, raw []byte) bool {
		var ev nostr.Event
		if err := ev.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		got = append(got, &ev)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	for i, ev := range got {
		if !ev.CheckID() || ev.ID != want[i] {
			t.Fatalf("thread event %d: %v, want %s", i, ev, want[i])
		}
	}
	if _, err := s.Delete(context.Background(), reaction.ID); err != nil {
		t.Fatal(err)
	}
	if keys, _, _ := eKeys(t, s.db); len(keys) != 4 { // reply's, long's, expired's, expiring's
		t.Fatalf("%d e keys after the reaction's deletion, want 4", len(keys))
	}
	if got := queryIDs(t, s, thread); !slices.Equal(got, []string{expiring.ID, long.ID, reply.ID}) {
		t.Fatalf("thread after a deletion: %v", got)
	}
}

// threadStore writes into dir events replying to and reacting on a few
// roots, some too long to copy, and returns the thread filters with what
// each matches.
func threadStore(t *testing.T, dir string, n int) map[string][]string {
	t.Helper()
	s, db := openAt(t, dir)
	defer db.Close()
	var roots []*nostr.Event
	for i := range 10 {
		root := mkEvent(testPubs[i%3], 1, nostr.Timestamp(1_700_000_000+i), "root "+strconv.Itoa(i))
		mustSave(t, s, root)
		roots = append(roots, root)
	}
	for i := range n {
		root := roots[i%len(roots)]
		content := "reply " + strconv.Itoa(i)
		if i%17 == 0 {
			content = strings.Repeat(content, maxCovered/len(content))
		}
		kind := 1 + 6*(i%2) // replies and reactions
		mustSave(t, s, mkEvent(testPubs[i%4], kind, nostr.Timestamp(1_700_000_100+i), content,
			nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", roots[(i+1)%len(roots)].ID}, nostr.Tag{"p", root.PubKey}))
	}
	threads := map[string][]string{}
	for _, root := range roots {
		threads[root.ID] = queryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"e": {root.ID}}, Kinds: []int{1, 7}})
	}
	return threads
}

func checkThreads(t *testing.T, s *Store, threads map[string][]string) {
	t.Helper()
	for root, want := range threads {
		if got := queryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"e": {root}}, Kinds: []int{1, 7}}); !slices.Equal(got, want) {
			t.Fatalf("thread %s: %d events, want %d", root, len(got), len(want))
		}
	}
}

// A store of format 2, whose e keys hold nothing, answers as before, and
// its first Open under format 3 copies every event into its e keys, once.
func TestUpgradeCoversETags(t *testing.T) {
	dir := t.TempDir()
	threads := threadStore(t, dir, 600)
	_, db := openAt(t, dir)
	emptied := uncover(t, db, 1)
	if err := db.Update(func(txn *kv.Txn) error { return txn.Set(formatKey, []byte{2}) }); err != nil {
		t.Fatal(err)
	}
	long := 2 * (600/17 + 1) // two e tags each
	if got, missing := checkCovered(t, db); got != 0 || missing != emptied-long {
		t.Fatalf("uncovered: %d e keys hold their event and %d do not", got, missing)
	}
	db.Close()
	for range 2 { // the second Open finds the store upgraded
		s, db := openAt(t, dir)
		if got, missing := checkCovered(t, db); got != emptied-long || missing != 0 {
			t.Fatalf("after the upgrade: %d e keys hold their event and %d do not, want %d and 0", got, missing, emptied-long)
		}
		if v := formatOf(t, db); v != formatVersion {
			t.Fatalf("format %d after the upgrade", v)
		}
		checkThreads(t, s, threads)
		db.Close()
	}
}

// Half the e keys empty, as a store between the two formats could be: the
// merge of ranges whose keys do and do not hold the event stays exact.
func TestHalfCoveredStoreMatchesTheModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkAgainstModel(t, seed, 150, 150, true) })
	}
}

// An upgrade to format 3 killed at any moment (kill -9) is finished by the
// next Open.
func TestUpgradeCoverSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	threads := threadStore(t, dir, 6000)
	_, db := openAt(t, dir)
	uncover(t, db, 1)
	if err := db.Update(func(txn *kv.Txn) error { return txn.Set(formatKey, []byte{2}) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	killOpens(t, dir, 500*time.Millisecond, func(db *kv.DB) string {
		covered, missing := checkCovered(t, db)
		return fmt.Sprintf("format %d, %d e keys hold their event, %d not yet", formatOf(t, db), covered, missing)
	})
	s, db := openAt(t, dir)
	defer db.Close()
	if covered, missing := checkCovered(t, db); missing != 0 || formatOf(t, db) != formatVersion {
		t.Fatalf("format %d, %d e keys hold their event and %d do not", formatOf(t, db), covered, missing)
	}
	checkThreads(t, s, threads)
}
