package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/testkit"
)

func openTest(t *testing.T) *DB {
	t.Helper()
	s, err := DefaultSettings().Open(t.TempDir(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Many writers of one record all land: each conflict is retried, none is
// lost or answered with an error.
func TestUpdateRetriesConflicts(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	k := Key(PrefixFaucet, 1)
	const writers = 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var read sync.WaitGroup // every writer's first attempt has read
	read.Add(writers)
	for range writers {
		wg.Go(func() {
			first := true
			errs <- s.Update(func(txn *Txn) error {
				var n int
				if _, err := GetJSON(txn, k, &n); err != nil {
					return err
				}
				if first { // all read the same value: all but one conflict
					first = false
					read.Done()
					read.Wait()
				}
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
	t.Parallel()
	for _, cache := range []int64{0, 32 << 20, 300 << 20} {
		st, err := Settings{CacheSize: settings.Bytes(cache)}.Open(t.TempDir(), quiet())
		if err != nil {
			t.Fatal(err)
		}
		o := st.db.Opts()
		st.Close()
		if o.MemTableSize != 16<<20 || o.NumMemtables != 3 || o.BlockCacheSize != 0 || o.Compression != options.None || o.NumCompactors != 2 || o.MetricsEnabled || o.ValueLogFileSize != 64<<20 {
			t.Errorf("cache %d: badger has memtables %d×%d, block cache %d, compression %v, %d compactors, metrics %v, value logs %d",
				cache, o.NumMemtables, o.MemTableSize, o.BlockCacheSize, o.Compression, o.NumCompactors, o.MetricsEnabled, o.ValueLogFileSize)
		}
	}
	if d := DefaultSettings(); d.CacheSize != 32<<20 {
		t.Errorf("default cache %v, want 32 MiB", d.CacheSize)
	}
}

// A data dir whose tables an older outpost wrote compressed, with a block
// cache, still reads whole without one; the tables written from then on
// are not compressed.
func TestCompressedTablesReadWithoutBlockCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := func(i int) []byte { return Key(PrefixRelay, 1, U64(uint64(i))) }
	val := func(i int) []byte { return []byte(strings.Repeat(fmt.Sprintf("value %d ", i), 40)) }
	old, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "badger")).WithLogger(nil).
		WithCompression(options.Snappy).WithBlockCacheSize(8 << 20))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	wb := old.NewWriteBatch()
	for i := range n {
		if err := wb.Set(key(i), val(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil { // flushes the memtable to a compressed table
		t.Fatal(err)
	}
	compressed := func(db *DB) (in, out int) {
		for _, ti := range db.db.Tables() {
			if ti.OnDiskSize*2 < ti.UncompressedSize {
				in++
			} else {
				out++
			}
		}
		return in, out
	}

	db, err := Settings{}.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := compressed(db); in == 0 {
		t.Fatal("the older store has no compressed table: the test proves nothing")
	}
	read := func(db *DB, from, to int) {
		t.Helper()
		if err := db.View(func(txn *Txn) error {
			for i := from; i < to; i++ {
				item, err := txn.Get(key(i))
				if err != nil {
					return fmt.Errorf("key %d: %w", i, err)
				}
				if got, _ := item.ValueCopy(nil); !bytes.Equal(got, val(i)) {
					return fmt.Errorf("key %d: %.20q, want %.20q", i, got, val(i))
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	read(db, 0, n)
	if err := db.Update(func(txn *Txn) error {
		for i := n; i < 2*n; i++ {
			if err := txn.Set(key(i), val(i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = (Settings{}).Open(dir, quiet()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	read(db, 0, 2*n)
	if _, out := compressed(db); out == 0 {
		t.Error("no table written uncompressed")
	}
}

// badger retries a failed flush for ever as it closes; on a data dir that
// is gone, Close gives up after its wait instead of hanging shutdown.
func TestCloseGivesUpOnADataDirGone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := DefaultSettings().Open(dir, quiet())
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
	t.Parallel()
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
	t.Parallel()
	dir := t.TempDir()
	s, err := DefaultSettings().Open(dir, quiet())
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

// badger's compactions write tables of at most 1 MiB to the first level
// below level 0: each table being written takes twice its size in buffers
// until it is done, and with badger's 2 MiB ingest held 180 MB of them
// live, more than the memory limit leaves (see baseTableSize).
func TestTablesBuiltSmall(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if got := s.db.Opts().BaseTableSize; got > 1<<20 {
		t.Errorf("badger's base table size is %d bytes; want at most 1 MiB", got)
	}
}

// A database its opener refuses leaves no disk reserve of its own behind,
// but keeps one an earlier run made.
func TestAbandonLeavesTheDirAsFound(t *testing.T) {
	t.Parallel()
	reserve := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, reserveName))
		return err == nil
	}
	dir := t.TempDir()
	db, err := DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the disk reserve", func() bool { return reserve(dir) })
	if err := db.Abandon(); err != nil {
		t.Fatal(err)
	}
	if reserve(dir) {
		t.Fatal("Abandon left the reserve this run made")
	}

	db, err = DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the disk reserve", func() bool { return reserve(dir) })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = DefaultSettings().Open(dir, quiet()); err != nil {
		t.Fatal(err)
	}
	if err := db.Abandon(); err != nil {
		t.Fatal(err)
	}
	if !reserve(dir) {
		t.Fatal("Abandon deleted a reserve an earlier run made")
	}
}
