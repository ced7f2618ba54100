package kv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4/table"
)

// dropWritten takes the tables badger writes, by flushes and compactions,
// out of this process's RSS, all but their indexes; the pages stay in the
// page cache, and every record reads back the same. Records are read as
// tables are dropped under them (a table dropped and read again is mapped
// again, as it should: only the tables written after the reads are
// measured).
func TestDropWritten(t *testing.T) {
	s := openUnwarmed(t, t.TempDir()) // tables left mapped, but for dropWritten below
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.dropWritten(ctx, time.Millisecond, quiet())
	}()
	defer func() { cancel(); <-done }()

	const n = 32 << 10 // of 1 KiB: two memtables
	writeInBatches(t, s, n)
	read := tableSet(s.db.Tables())
	for from := n; from < 2*n; from += 4 << 10 { // two more, not read
		wb := s.db.NewWriteBatch()
		for i := from; i < from+4<<10; i++ {
			if err := wb.Set(Key(PrefixRelay, 1, U64(uint64(i))), value(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := wb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for {
		resident, indexes := writtenSince(t, s, read)
		if settled(s) && resident <= indexes && indexes > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d bytes of the tables written since the reads resident; want at most their indexes' %d", resident, indexes)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if cached, size := pageCached(t, s.dir); cached < size*9/10 {
		t.Errorf("%d of %d bytes of tables in the page cache; want nearly all", cached, size)
	}
	readRecords(t, s, 2*n)
}

// writtenSince is how many bytes of s's tables not in before are resident
// in this process's mappings, and how many bytes dropWritten leaves mapped
// of them: the pages from the end of each table's blocks to the end of the
// file.
func writtenSince(t *testing.T, s *DB, before map[uint64]bool) (resident, indexes int64) {
	t.Helper()
	mapped := residentByMapping(t, s.dir)
	page := int64(os.Getpagesize())
	for _, info := range s.db.Tables() {
		if before[info.ID] {
			continue
		}
		path := filepath.Join(s.dir, table.IDToFilename(info.ID))
		fi, err := os.Stat(path)
		if err != nil {
			continue // compacted away meanwhile
		}
		end, err := blocksEnd(path)
		if err != nil {
			continue
		}
		indexes += (fi.Size()+page-1)&^(page-1) - end&^(page-1)
		for k, n := range mapped {
			if strings.HasSuffix(k, " "+path) {
				resident += n
			}
		}
	}
	return resident, indexes
}

// With dropWritten on, ReleasePages leaves the tables alone: what is
// mapped of them was read since they were written, the relay's working
// set, and MADV_PAGEOUT would take it out of the page cache too.
func TestReleasePagesLeavesTablesToDropWritten(t *testing.T) {
	dir := t.TempDir()
	skipOnTmpfs(t, dir)
	s, err := DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 24 << 10 // of 1 KiB: more than a memtable
	writeRecords(t, s, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for { // until dropWritten has dropped every table, so that it drops none read below
		resident, indexes := writtenSince(t, s, nil)
		if settled(s) && resident <= indexes {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("badger flushed no table, never compacted it, or dropWritten left it (%d bytes resident)", resident)
		case <-time.After(50 * time.Millisecond):
		}
	}
	readRecords(t, s, n)
	before := residentTables(t, s.dir)
	if before < 4<<20 {
		t.Fatalf("only %d bytes of tables resident after reading them all: nothing to test", before)
	}
	if _, err := s.ReleasePages(); err != nil {
		t.Fatal(err)
	}
	if after := residentTables(t, s.dir); after < before*3/4 {
		t.Errorf("tables resident: %d bytes read, %d after ReleasePages; want them left", before, after)
	}
	if cached, size := pageCached(t, s.dir); cached < size*9/10 {
		t.Errorf("%d of %d bytes of tables in the page cache; want nearly all", cached, size)
	}
}
