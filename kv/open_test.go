package kv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/settings"
)

func openTest(t *testing.T) *DB {
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
			errs <- s.Update(func(txn *Txn) error {
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
	s.View(func(txn *Txn) error { _, err := GetJSON(txn, k, &got); return err })
	if got != writers {
		t.Fatalf("counter = %d after %d increments", got, writers)
	}
}

func TestSettingsSizeBadger(t *testing.T) {
	for _, cache := range []int64{0, 32 << 20, 300 << 20} {
		st, err := Settings{CacheSize: settings.Bytes(cache)}.Open(t.TempDir(), quiet())
		if err != nil {
			t.Fatal(err)
		}
		o := st.db.Opts()
		st.Close()
		if o.MemTableSize != 16<<20 || o.NumMemtables != 3 || o.BlockCacheSize != max(cache, 32<<20)/2 || o.NumCompactors != 2 || o.MetricsEnabled || o.ValueLogFileSize != 64<<20 {
			t.Errorf("cache %d: badger has memtables %d×%d, block cache %d, %d compactors, metrics %v, value logs %d",
				cache, o.NumMemtables, o.MemTableSize, o.BlockCacheSize, o.NumCompactors, o.MetricsEnabled, o.ValueLogFileSize)
		}
	}
	if d := DefaultSettings(); d.CacheSize != 32<<20 {
		t.Errorf("default cache %v, want 32 MiB", d.CacheSize)
	}
}

// badger retries a failed flush for ever as it closes; on a data dir that
// is gone, Close gives up after its wait instead of hanging shutdown.
func TestCloseGivesUpOnADataDirGone(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(txn *Txn) error {
		return txn.Set(Key(PrefixRelay, 1, []byte("k")), []byte("unflushed"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "badger")); err != nil {
		t.Fatal(err)
	}
	s.closeWait = 300 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not close within 300ms") {
			t.Fatalf("Close: %v, want it to give up", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting after 10s")
	}
}

func TestSettingsValid(t *testing.T) {
	for _, tt := range []struct {
		min settings.Bytes
		ok  bool
	}{{0, true}, {32 << 20, true}, {256 << 20, true}, {16 << 20, false}} {
		if err := (Settings{MinFreeSpace: tt.min}).Valid(); (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "OUTPOST_MIN_FREE_SPACE")) {
			t.Errorf("MinFreeSpace %v: %v", tt.min, err)
		}
	}
}

// Once the data dir is removed under a running outpost, writes are refused with their own error (not acknowledged into
// deleted files) and /health says the store is down.
func TestWritesRefusedOnceTheDataDirIsGone(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.closeWait = 100 * time.Millisecond // badger cannot flush into a removed dir
	defer s.Close()
	if err := os.RemoveAll(filepath.Join(dir, "badger")); err != nil {
		t.Fatal(err)
	}
	s.gate.space.Check()

	err = s.Update(func(txn *Txn) error { return txn.Set(Key(PrefixRelay, 1), []byte("x")) })
	if !errors.Is(err, ErrDataDirGone) {
		t.Errorf("Update: %v, want ErrDataDirGone", err)
	}
	if s.Writable() {
		t.Error("Writable after the data dir was removed")
	}
	h := s.Health(context.Background())
	if h.Status != outpost.HealthDown || h.Checks.Writable || !strings.Contains(h.Reason, "restart") {
		t.Errorf("health %+v, want down, not writable, with the reason", h)
	}
}
