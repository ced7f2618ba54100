package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4/fb"
	"github.com/dgraph-io/badger/v4/table"
	"golang.org/x/sys/unix"
)

// openResident opens a store of tables written before, with all of its
// tables read into this process's mappings, and returns how many bytes of
// them are resident.
func openResident(t *testing.T) (*DB, int64) {
	t.Helper()
	dir := t.TempDir()
	tablesOnDisk(t, dir)
	s := openUnwarmed(t, dir)
	for _, m := range s.planWarm(1 << 40).tables {
		populate(t, m)
	}
	resident := residentTables(t, s.dir)
	if resident < 4<<20 {
		t.Fatalf("only %d bytes of tables resident: nothing to test", resident)
	}
	return s, resident
}

// populate faults every page of m into this process's mappings
// (MADV_POPULATE_READ, Linux 5.14), as reads by badger would; the warm at
// start reads into the page cache only.
func populate(t *testing.T, m mapping) {
	t.Helper()
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_POPULATE_READ); e != 0 {
		t.Fatalf("MADV_POPULATE_READ of %s: %v", m.path, e)
	}
}

// unmapTables takes the tables' blocks out of outpost's RSS and leaves
// their indexes; the pages stay in the page cache, and every record reads
// back the same.
func TestUnmapTables(t *testing.T) {
	s, before := openResident(t)
	ends := blockEnds{}
	if err := s.unmapTables(ends, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	page := int64(os.Getpagesize())
	var indexes int64 // what stays mapped: the pages from the end of each table's blocks
	for _, info := range s.db.Tables() {
		path := filepath.Join(s.dir, table.IDToFilename(info.ID))
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		end, ok := ends[info.ID]
		if !ok {
			t.Fatalf("table %d not unmapped", info.ID)
		}
		indexes += (fi.Size()+page-1)&^(page-1) - end&^(page-1)
	}
	if after := residentTables(t, s.dir); after > indexes || after < indexes/2 {
		t.Errorf("tables resident: %d bytes before, %d after; want their indexes' %d", before, after, indexes)
	}
	if cached, size := pageCached(t, s.dir); cached < size*9/10 {
		t.Errorf("%d of %d bytes of tables in the page cache after unmapping; want nearly all", cached, size)
	}
	readRecords(t, s, 24<<10)
}

// blocksEnd finds where badger's last block ends and its index, as badger
// reads it, begins.
func TestBlocksEnd(t *testing.T) {
	s, _ := openResident(t)
	for _, info := range s.db.Tables() {
		path := filepath.Join(s.dir, table.IDToFilename(info.ID))
		end, err := blocksEnd(path)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checksum := int64(binary.BigEndian.Uint32(data[len(data)-4:]))
		indexLen := int64(binary.BigEndian.Uint32(data[int64(len(data))-8-checksum:]))
		index := fb.GetRootAsTableIndex(data[end:end+indexLen], 0)
		var last fb.BlockOffset
		if !index.Offsets(&last, index.OffsetsLength()-1) {
			t.Fatalf("table %d: no blocks in the index at %d", info.ID, end)
		}
		if got := int64(last.Offset()) + int64(last.Len()); got != end || index.KeyCount() != info.KeyCount {
			t.Errorf("table %d: the index at %d says the blocks end at %d and it holds %d keys; badger says %d keys", info.ID, end, got, index.KeyCount(), info.KeyCount)
		}
	}
	if _, err := blocksEnd(filepath.Join(s.dir, "MANIFEST")); err == nil {
		t.Error("a file that is no table: no error")
	}
}

// boundRSS takes RSS under its limit by unmapping tables.
func TestBoundRSS(t *testing.T) {
	s, tables := openResident(t)
	stat, err := openStatm()
	if err != nil {
		t.Fatal(err)
	}
	defer stat.Close()
	rss, _, err := stat.resident()
	if err != nil {
		t.Fatal(err)
	}
	limit := rss - tables/2
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.boundRSS(ctx, limit, time.Millisecond, quiet())
	}()
	defer func() { cancel(); <-done }()
	for {
		if rss, _, err = stat.resident(); err != nil {
			t.Fatal(err)
		}
		if rss <= limit {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("RSS %d, over the limit of %d; %d bytes of tables still resident, of %d", rss, limit, residentTables(t, s.dir), tables)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Under the limit because tables were unmapped, not because the heap shrank.
	if after := residentTables(t, s.dir); after > tables/2 {
		t.Errorf("RSS under the limit, but %d of %d bytes of tables still resident", after, tables)
	}
	readRecords(t, s, 24<<10)
}

// readRecords checks that records 0 to n-1 read back as writeRecords wrote
// them.
func readRecords(t *testing.T, s *DB, n int) {
	t.Helper()
	if err := s.View(func(txn *Txn) error {
		for i := range n {
			if err := sameRecord(txn, i); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sameRecord checks that record i reads back as writeRecords wrote it.
func sameRecord(txn *Txn, i int) error {
	item, err := txn.Get(Key(PrefixRelay, 1, U64(uint64(i))))
	if err != nil {
		return fmt.Errorf("record %d: %w", i, err)
	}
	return item.Value(func(v []byte) error {
		if !bytes.Equal(v, value(i)) {
			return fmt.Errorf("record %d changed", i)
		}
		return nil
	})
}

// pageCached is how many bytes of the tables under dir the page cache
// holds, whoever maps them, and their size: mincore over a mapping of its
// own.
func pageCached(t *testing.T, dir string) (cached, size int64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	page := int64(os.Getpagesize())
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() == 0 {
			f.Close()
			continue
		}
		b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		vec := make([]byte, (fi.Size()+page-1)/page)
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatal(e)
		}
		for _, v := range vec {
			cached += int64(v&1) * page
		}
		size += fi.Size()
		unix.Munmap(b)
	}
	return cached, size
}

// boundRSS unmapping tables over and over while badger flushes and compacts
// (tables listed, compacted away and unmapped meanwhile) loses no record
// and corrupts no memory: MADV_DONTNEED on a range badger had unmapped and
// Go had mapped again would zero Go's own memory.
func TestBoundRSSWhileCompacting(t *testing.T) {
	s := openUnwarmed(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.boundRSS(ctx, 1, time.Millisecond, quiet()) // always over: it unmaps whatever it may, every tick
	}()
	defer func() { cancel(); <-done }()

	const n = 64 << 10 // of 1 KiB: four memtables
	writeInBatches(t, s, n)
	readRecords(t, s, n)
	for {
		files, _ := filepath.Glob(filepath.Join(s.dir, "*.sst"))
		var size int64
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				size += fi.Size()
			}
		}
		resident := residentTables(t, s.dir)
		if size > 0 && resident < size/4 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d bytes of tables still resident: boundRSS unmapped nothing", resident, size)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// writeInBatches writes records 0 to n-1 in batches of 4,096, so that
// badger flushes and compacts between them, and reads a sample of those
// written so far back after each, while tables may be unmapped under it.
func writeInBatches(t *testing.T, s *DB, n int) {
	t.Helper()
	const batch = 4 << 10
	for from := 0; from < n; from += batch {
		wb := s.db.NewWriteBatch()
		for i := from; i < min(from+batch, n); i++ {
			if err := wb.Set(Key(PrefixRelay, 1, U64(uint64(i))), value(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := wb.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := s.View(func(txn *Txn) error {
			for i := from % 61; i < min(from+batch, n); i += 61 {
				if err := sameRecord(txn, i); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
