package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Events and domain records share one database; reopening it (which checks
// its format) must leave both intact.
func TestEventsAndRecordsSurviveReopen(t *testing.T) {
	t.Parallel()
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
		if _, err := s.Events.Save(ctx, &ev); err != nil {
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
	got := map[string]bool{}
	for ev, err := range s.Events.Find(ctx, nostr.Filter{Kinds: []int{1}, Limit: 100}) {
		if err != nil {
			t.Fatal(err)
		}
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
	if _, err := s.Events.Save(ctx, &ev); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Events.Count(ctx, []nostr.Filter{{Kinds: []int{1}}}, nil); err != nil || n != int64(len(ids)+1) {
		t.Errorf("after a new save: %d events (%v), want %d", n, err, len(ids)+1)
	}
}

func TestOpenTwiceIsLocked(t *testing.T) {
	t.Parallel()
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

// A data dir of another format than this version's (development builds'
// layouts, eventstore's, a gonuts wallet) is refused with a message saying
// what to do, and nothing in it is written.
func TestOpenRefusesOtherFormats(t *testing.T) {
	t.Parallel()
	ev := func(prefix byte) []byte { return append([]byte{prefix}, bytes.Repeat([]byte{7}, 40)...) }
	for _, c := range []struct {
		name, found string
		keys        [][2][]byte // written before Open, besides a record of each service
		wallet      bool        // a gonuts wallet in faucet/wallet
	}{
		{name: "eventstore", found: "eventstore v0.17.8's layout",
			keys: [][2][]byte{{{0, 0, 0, 0, 1}, bytes.Repeat([]byte{9}, 100)}, {{1, 2, 3}, nil}, {{255}, {0, 0, 0, 4}}}},
		{name: "eventstore version key alone", found: "eventstore v0.17.8's layout", keys: [][2][]byte{{{255}, {0, 0, 0, 4}}}},
		{name: "format 1", found: "format 1", keys: [][2][]byte{{ev(0x40), []byte("event")}, {ev(0x42), nil}}},
		{name: "format 2", found: "format 2", keys: [][2][]byte{{ev(0x40), []byte("event")}, {{0x49}, {2}}}},
		{name: "format 4", found: "format 4", keys: [][2][]byte{{ev(0x41), []byte("event")}, {{0x49}, {4}}}},
		{name: "gonuts wallet", found: "a gonuts wallet (faucet/wallet/wallet.db)", wallet: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.wallet {
				if err := os.MkdirAll(filepath.Join(dir, "faucet", "wallet"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "faucet", "wallet", "wallet.db"), []byte("bolt"), 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				writeRaw(t, dir, c.keys)
			}
			before := dump(t, dir)
			s, err := Open(dir, quiet())
			if err == nil {
				s.Close()
				t.Fatal("Open accepted it")
			}
			if !errors.Is(err, ErrOtherFormat) {
				t.Fatalf("Open: %v, want ErrOtherFormat", err)
			}
			for _, want := range []string{dir, c.found, "outpost export", "outpost import", "format 3"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the message does not say %q: %v", want, err)
				}
			}
			if after := dump(t, dir); !maps.Equal(after, before) {
				t.Errorf("Open changed the data dir:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// writeRaw writes keys into a database in dir, as another program would,
// and a record of each service.
func writeRaw(t *testing.T, dir string, keys [][2][]byte) {
	db, err := kv.DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(txn *kv.Txn) error {
		for _, p := range []byte{kv.PrefixBanlist, kv.PrefixMintdir, kv.PrefixFaucet, kv.PrefixRelay, kv.PrefixWallet} {
			if err := txn.Set(kv.Key(p, 1, []byte("k")), []byte{p}); err != nil {
				return err
			}
		}
		for _, kv := range keys {
			if err := txn.Set(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// dump reads every record in dir's database (none when there is no
// database), and the names of the files outside it.
func dump(t *testing.T, dir string) map[string]string {
	all := map[string]string{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(dir, path); rel == "badger" || err != nil {
			return fs.SkipDir
		} else if !d.IsDir() {
			all["file "+rel] = ""
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "badger")); errors.Is(err, os.ErrNotExist) {
		return all
	}
	s := kv.DefaultSettings()
	s.MinFreeSpace = 0 // no disk reserve: reading must leave the dir as it was
	db, err := s.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			all[fmt.Sprintf("%x", it.Item().Key())] = fmt.Sprintf("%x", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return all
}
