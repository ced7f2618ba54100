package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// A backup taken while writers commit holds every write acknowledged
// before it started — events and records of every prefix, the faucet's
// wallet included — and restores into a new data dir.
func TestBackupUnderWriteLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(t.TempDir(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Writers: records under every prefix, and events; each acknowledges
	// the sequence numbers it committed.
	var stop atomic.Bool
	var wg sync.WaitGroup
	prefixes := []byte{kv.PrefixBanlist, kv.PrefixMintdir, kv.PrefixFaucet, kv.PrefixRelay, kv.PrefixWallet}
	acked := make([]atomic.Int64, len(prefixes)+1) // the last one counts events
	sk := nostr.GeneratePrivateKey()
	var events sync.Map // seq → id
	for w, p := range prefixes {
		wg.Go(func() {
			for i := int64(1); !stop.Load(); i++ {
				if err := s.DB.Update(func(txn *kv.Txn) error {
					return kv.PutJSON(txn, kv.Key(p, 1, kv.U64(uint64(i))), i)
				}); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(i)
			}
		})
	}
	wg.Go(func() {
		for i := int64(1); !stop.Load(); i++ {
			ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1700000000 + i), Content: "under load"}
			ev.Sign(sk)
			if _, err := s.Events.Save(ctx, &ev); err != nil {
				t.Error(err)
				return
			}
			events.Store(i, ev.ID)
			acked[len(prefixes)].Store(i)
		}
	})
	for acked[len(prefixes)].Load() < 50 || acked[0].Load() < 50 {
		if t.Failed() {
			t.FailNow()
		}
	}

	before := make([]int64, len(acked))
	for i := range acked {
		before[i] = acked[i].Load()
	}
	path := filepath.Join(t.TempDir(), "outpost.backup")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(f, kv.BackupHeader{Version: "test", Files: map[string][]byte{"service.key": []byte("nsec-ish\n")}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	stop.Store(true)
	wg.Wait()

	dir := filepath.Join(t.TempDir(), "restored")
	h, err := kv.Restore(path, dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if string(h.Files["service.key"]) != "nsec-ish\n" || h.Version != "test" {
		t.Fatalf("header = %+v", h)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "service.key")); string(b) != "nsec-ish\n" {
		t.Fatalf("service.key restored as %q", b)
	}
	r, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for w, p := range prefixes {
		for i := int64(1); i <= before[w]; i++ {
			var got int64
			err := r.DB.View(func(txn *kv.Txn) error {
				found, err := kv.GetJSON(txn, kv.Key(p, 1, kv.U64(uint64(i))), &got)
				if err == nil && !found {
					err = errors.New("missing")
				}
				return err
			})
			if err != nil || got != i {
				t.Fatalf("prefix %#x record %d (acknowledged before the backup, %d were): %v", p, i, before[w], err)
			}
		}
	}
	for i := int64(1); i <= before[len(prefixes)]; i++ {
		id, _ := events.Load(i)
		n, err := r.Events.Count(ctx, []nostr.Filter{{IDs: []string{id.(string)}}}, nil)
		if err != nil || n != 1 {
			t.Fatalf("event %d of %d acknowledged before the backup: count %d, %v", i, before[len(prefixes)], n, err)
		}
	}
	t.Logf("restored %v acknowledged writes; the writers went on to %v", before, func() (a []int64) {
		for i := range acked {
			a = append(a, acked[i].Load())
		}
		return
	}())
}

func TestRestoreRefusesNonEmptyDirAndBadFiles(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Update(func(txn *kv.Txn) error { return kv.PutJSON(txn, kv.Key(kv.PrefixWallet, 1), "proofs") }); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "b")
	f, _ := os.Create(path)
	if err := s.Backup(f, kv.BackupHeader{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s.Close()
	whole, _ := os.ReadFile(path)

	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o600)
	if _, err := kv.Restore(path, full, quiet()); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into a non-empty dir: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(full, "keep")); string(b) != "x" {
		t.Fatal("the non-empty dir was changed")
	}

	for name, content := range map[string][]byte{
		"cut off":        whole[:len(whole)-100],
		"cut in trailer": whole[:len(whole)-3],
		"one byte flipped": func() []byte {
			b := append([]byte{}, whole...)
			b[len(b)/2] ^= 1
			return b
		}(),
		"not a backup": []byte("hello world, this is not a backup at all, but it is long enough to have a trailer."),
	} {
		bad := filepath.Join(t.TempDir(), "bad")
		os.WriteFile(bad, content, 0o600)
		dir := filepath.Join(t.TempDir(), "new")
		if _, err := kv.Restore(bad, dir, quiet()); !errors.Is(err, kv.ErrBadBackup) {
			t.Errorf("%s: err = %v, want kv.ErrBadBackup", name, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s: a refused restore left %d files", name, len(entries))
		}
	}

	dir := filepath.Join(t.TempDir(), "new")
	if _, err := kv.Restore(path, dir, quiet()); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got string
	r.DB.View(func(txn *kv.Txn) error { _, err := kv.GetJSON(txn, kv.Key(kv.PrefixWallet, 1), &got); return err })
	if got != "proofs" {
		t.Fatalf("wallet record restored as %q", got)
	}
}
