package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
	bbackend "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/kv"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Events and domain records share one database; reopening it (which looks
// for events in eventstore's old layout) must leave both intact.
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
	for _, p := range []byte{kv.PrefixBanlist, kv.PrefixMintdir, kv.PrefixFaucet, kv.PrefixRelay, kv.PrefixWallet} {
		if err := s.DB.Update(func(txn *kv.Txn) error {
			return kv.PutJSON(txn, kv.Key(p, 1, []byte("k")), rec{N: int(p)})
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
	for _, p := range []byte{kv.PrefixBanlist, kv.PrefixMintdir, kv.PrefixFaucet, kv.PrefixRelay, kv.PrefixWallet} {
		var r rec
		err := s.DB.View(func(txn *kv.Txn) error {
			found, err := kv.GetJSON(txn, kv.Key(p, 1, []byte("k")), &r)
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
	// And a save after reopen adds to the events instead of overwriting one.
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
	if _, err := Open(dir, quiet()); err != kv.ErrLocked {
		t.Fatalf("second Open: got %v, want kv.ErrLocked", err)
	}
}

// A data dir of an outpost that stored events with eventstore's backend:
// Open moves the events into the event store's layout and deletes the old
// keys, and the domain records next to them are untouched.
func TestOpenMovesEventstoreEventsAndKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	old := &bbackend.BadgerBackend{Path: filepath.Join(dir, "badger"),
		BadgerOptionsModifier: func(o badger.Options) badger.Options { return o.WithLogger(nil) }}
	if err := old.Init(); err != nil {
		t.Fatal(err)
	}
	sk := nostr.GeneratePrivateKey()
	want := map[string]bool{}
	for i := range 50 {
		ev := nostr.Event{Kind: 1984, CreatedAt: nostr.Timestamp(1700000000 + i), Content: "report", Tags: nostr.Tags{{"p", "x"}}}
		if i%5 == 0 {
			ev = nostr.Event{Kind: 38000, CreatedAt: nostr.Timestamp(1700000000 + i), Tags: nostr.Tags{{"d", string(rune('a' + i))}, {"k", "38172"}}}
		}
		ev.Sign(sk)
		if err := old.SaveEvent(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		want[ev.ID] = true
	}
	type rec struct{ N int }
	prefixes := []byte{kv.PrefixBanlist, kv.PrefixMintdir, kv.PrefixFaucet, kv.PrefixRelay}
	for _, p := range prefixes {
		if err := old.DB.Update(func(txn *badger.Txn) error {
			return txn.Set(kv.Key(p, 1, []byte("k")), fmt.Appendf(nil, `{"N":%d}`, p)) // rec as JSON
		}); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch, _ := s.Events.QueryEvents(ctx, nostr.Filter{})
	got := 0
	for ev := range ch {
		if !want[ev.ID] {
			t.Errorf("unexpected event %s", ev.ID)
		}
		got++
	}
	if got != len(want) {
		t.Fatalf("%d events after the move, want %d", got, len(want))
	}
	s.DB.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if k := it.Item().Key(); k[0] <= 8 || k[0] == 255 {
				t.Fatalf("key %x of eventstore's layout left", k)
			}
		}
		return nil
	})
	for _, p := range prefixes {
		var r rec
		var found bool
		err := s.DB.View(func(txn *kv.Txn) (err error) {
			found, err = kv.GetJSON(txn, kv.Key(p, 1, []byte("k")), &r)
			return err
		})
		if err != nil || !found || r.N != int(p) {
			t.Errorf("record under %#x after the move: %v %v %+v", p, found, err, r)
		}
	}
}
