package store

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/nbd-wtf/go-nostr"
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
	for _, p := range []byte{PrefixBanlist, PrefixMintdir, PrefixFaucet, PrefixRelay, PrefixWallet} {
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
	for _, p := range []byte{PrefixBanlist, PrefixMintdir, PrefixFaucet, PrefixRelay, PrefixWallet} {
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
