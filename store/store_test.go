package store

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Events and domain records share one database; reopening it (which runs
// eventstore's migrations) must leave both intact.
func TestEventsAndRecordsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	sk := nostr.GeneratePrivateKey()
	var ids []string
	for i := range 20 {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1700000000 + i), Content: "hello", Tags: nostr.Tags{{"t", "x"}}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		if err := s.Events.SaveEvent(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	type rec struct{ N int }
	for _, p := range []byte{PrefixBanlist, PrefixMintdir, PrefixFaucet} {
		if err := s.DB.Update(func(txn *badger.Txn) error {
			return PutJSON(txn, Key(p, 1, []byte("k")), rec{N: int(p)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch, err := s.Events.QueryEvents(ctx, nostr.Filter{Kinds: []int{1}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for ev := range ch {
		got[ev.ID] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("event %s lost after reopen", id)
		}
	}
	if len(got) != len(ids) {
		t.Errorf("got %d events, want %d", len(got), len(ids))
	}
	for _, p := range []byte{PrefixBanlist, PrefixMintdir, PrefixFaucet} {
		var r rec
		err := s.DB.View(func(txn *badger.Txn) error {
			found, err := GetJSON(txn, Key(p, 1, []byte("k")), &r)
			if !found && err == nil {
				t.Errorf("record under prefix %#x lost after reopen", p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.N != int(p) {
			t.Errorf("record under %#x = %d, want %d", p, r.N, p)
		}
	}
	// And a second save after reopen continues the event serial instead of
	// overwriting raw events.
	ev := nostr.Event{Kind: 1, CreatedAt: 1800000000, Content: "after"}
	ev.Sign(sk)
	if err := s.Events.SaveEvent(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	ch, _ = s.Events.QueryEvents(ctx, nostr.Filter{Kinds: []int{1}, Limit: 100})
	n := 0
	for range ch {
		n++
	}
	if n != len(ids)+1 {
		t.Errorf("after a new save: %d events, want %d", n, len(ids)+1)
	}
}

func TestOpenTwiceIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(dir, quiet()); err != ErrLocked {
		t.Fatalf("second Open: got %v, want ErrLocked", err)
	}
}

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Many writers of one record all land: each conflict is retried, none is
// lost or answered with an error.
func TestUpdateRetriesConflicts(t *testing.T) {
	s := openTest(t)
	k := Key(PrefixFaucet, 1)
	const writers = 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			errs <- Update(s.DB, func(txn *badger.Txn) error {
				var n int
				if _, err := GetJSON(txn, k, &n); err != nil {
					return err
				}
				time.Sleep(time.Millisecond) // let the others read the same value
				return PutJSON(txn, k, n+1)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Update: %v", err)
		}
	}
	var got int
	s.DB.View(func(txn *badger.Txn) error { _, err := GetJSON(txn, k, &got); return err })
	if got != writers {
		t.Fatalf("counter = %d after %d increments", got, writers)
	}
}

func TestUpdateGivesUpWithAConflictError(t *testing.T) {
	s := openTest(t)
	defer func(n int) { maxAttempts = n }(maxAttempts)
	maxAttempts = 3
	k := Key(PrefixFaucet, 2)
	attempts := 0
	err := Update(s.DB, func(txn *badger.Txn) error {
		attempts++
		if _, err := txn.Get(k); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		// Another transaction writes what this one read: its commit conflicts.
		if err := s.DB.Update(func(other *badger.Txn) error { return other.Set(k, []byte("x")) }); err != nil {
			return err
		}
		return txn.Set(k, []byte("y"))
	})
	if !outpost.IsKind(err, outpost.Conflict) || outpost.AsError(err).Code != "write_conflict" {
		t.Fatalf("got %v, want a 409 write_conflict", err)
	}
	if attempts != 3 {
		t.Fatalf("%d attempts, want 3", attempts)
	}
	// fn's own errors are returned at once, never retried.
	attempts = 0
	want := errors.New("no")
	if err := Update(s.DB, func(*badger.Txn) error { attempts++; return want }); err != want || attempts != 1 {
		t.Fatalf("got %v after %d attempts, want %v after 1", err, attempts, want)
	}
}
