package kv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/settings"
	"golang.org/x/sys/unix"
)

// tablesOnDisk writes more than a memtable of records and closes the
// store, so its data dir holds tables for the next open to map; it
// returns their size.
func tablesOnDisk(t *testing.T, dir string) int64 {
	t.Helper()
	s, err := DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	writeRecords(t, s, 24<<10) // of 1 KiB: more than a memtable (16 MiB)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The tables in one level, so that a store opened on them has nothing to
	// compact: else its first compaction (level 0 holds one table) reads
	// tables through their mappings, and writes new ones, while a test
	// counts what is resident (TestUnmapTables failed so in CI).
	if s, err = DefaultSettings().Open(dir, quiet()); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flatten(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "badger", "*.sst"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no table written (%v): nothing to test", err)
	}
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	return size
}

// openUnwarmed opens the store in dir without warming it, and with the
// tables it writes left mapped (see dropWritten), until the test ends.
func openUnwarmed(t *testing.T, dir string) *DB {
	t.Helper()
	settings := DefaultSettings()
	settings.WarmStore = false
	settings.keepWritten = true
	s, err := settings.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Opened with WarmStore, the store's tables end up in the page cache, not
// resident in outpost's mappings, where they would count in its RSS from
// the start (issue 53); with an RSS limit too, where boundRSS would unmap
// them.
func TestWarmStore(t *testing.T) {
	dir := t.TempDir()
	tablesOnDisk(t, dir)
	for _, rssLimit := range []settings.Bytes{0, 1 << 40} { // 1 TiB: boundRSS runs and never unmaps
		uncache(t, filepath.Join(dir, "badger"))
		s := DefaultSettings()
		s.RSSLimit = rssLimit
		db, err := s.Open(dir, quiet())
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-db.warming:
		case <-time.After(30 * time.Second):
			t.Fatal("warming did not end within 30 s")
		}
		cached, size := pageCached(t, db.dir)
		resident := residentTables(t, db.dir)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if cached < size*9/10 {
			t.Errorf("RSS limit %v: %d of %d bytes of tables in the page cache after the warm; want nearly all", rssLimit, cached, size)
		}
		if resident > size/2 {
			t.Errorf("RSS limit %v: %d of %d bytes of tables resident in outpost's mappings after the warm; want few", rssLimit, resident, size)
		}
	}
}

// uncache drops the page cache of the tables in dir, or skips the test
// where it cannot (tmpfs).
func uncache(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if cached, size := pageCached(t, dir); cached > size/2 {
		t.Skipf("%d of %d bytes of tables still in the page cache after FADV_DONTNEED (tmpfs?): nothing to test", cached, size)
	}
}

// A plan holds no table that would take it past its budget, and reading
// one stops when its context ends.
func TestWarmBudget(t *testing.T) {
	dir := t.TempDir()
	tablesOnDisk(t, dir)
	s := openUnwarmed(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	all := s.planWarm(1 << 40)
	if all.err != nil || all.bytes != all.total || len(all.tables) != len(s.db.Tables()) || all.total == 0 {
		t.Fatalf("no budget to speak of: %d of %d bytes in %d tables (badger has %d), %v; want all", all.bytes, all.total, len(all.tables), len(s.db.Tables()), all.err)
	}
	if read, tables, err := all.read(ctx); err != nil || read != all.bytes || tables != len(all.tables) {
		t.Errorf("read %d bytes in %d tables, %v; want %d in %d", read, tables, err, all.bytes, len(all.tables))
	}
	for _, budget := range []int64{0, all.total / 2, all.total - 1} {
		p := s.planWarm(budget)
		if p.bytes > budget || p.bytes == all.total || len(p.tables) == len(all.tables) {
			t.Errorf("budget of %d: %d bytes in %d tables; want at most the budget", budget, p.bytes, len(p.tables))
		}
	}
	ended, stop := context.WithCancel(ctx)
	stop()
	if _, _, err := all.read(ended); err != context.Canceled {
		t.Errorf("context ended: %v; want context.Canceled", err)
	}
}
