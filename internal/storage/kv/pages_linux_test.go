package kv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// After a flush, the table badger wrote is resident in outpost's mappings;
// ReleasePages gives it back, once, and every record reads back the same.
func TestReleasePages(t *testing.T) {
	dir := t.TempDir()
	skipOnTmpfs(t, dir)
	settings := DefaultSettings()
	settings.keepWritten = true // else nothing is left for ReleasePages
	s, err := settings.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// More than a memtable (16 MiB), so badger flushes one to a table.
	const n = 24 << 10
	writeRecords(t, s, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Measure a settled tree: badger lists a table once it is written and
	// synced, and with one level-0 table allowed it compacts the table it
	// flushed into the last level; a compaction that reads a table after
	// the advice faults its pages back in (6 of 24 MB, now and then). So
	// wait until the flushed table has left level 0: then nothing is left
	// for the compactors to read. (Flatten is not enough: it stops at a
	// level-0 score of 1, one table, where the compactors start.)
	for !settled(s) {
		select {
		case <-ctx.Done():
			t.Fatal("badger flushed no table, or never compacted it")
		case <-time.After(50 * time.Millisecond):
		}
	}
	mapped := residentByMapping(t, s.dir)
	var before int64
	for _, n := range mapped {
		before += n
	}
	if before < 4<<20 {
		t.Fatalf("only %d bytes of tables resident after a flush: nothing to test", before)
	}
	advised, err := s.ReleasePages()
	if err != nil {
		t.Fatal(err)
	}
	if advised == 0 {
		t.Fatal("advised no mapping")
	}
	// Of the mappings advised only.
	var after int64
	for k, n := range residentByMapping(t, s.dir) {
		if _, ok := mapped[k]; ok {
			after += n
		}
	}
	if after > before/4 {
		t.Errorf("tables resident: %d bytes before, %d after; want most given back", before, after)
	}
	// A second call advises only tables written since: with one level-0
	// table allowed, badger may be compacting the one it flushed, and maps
	// each table it writes before it lists it.
	for {
		tables, mapped := tableIDs(s), mappingKeys(t, s)
		if _, err := s.ReleasePages(); err != nil {
			t.Fatal(err)
		}
		again, err := s.ReleasePages()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(tableIDs(s), tables) && slices.Equal(mappingKeys(t, s), mapped) {
			if again != 0 {
				t.Errorf("second call advised %d bytes; want none: each mapping once", again)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatal("badger's tables kept changing")
		}
	}

	readRecords(t, s, n)
}

// Values over badger's threshold (1 MiB) are written to the value log
// through its mapping; ReleaseValueLogs gives back what is resident of
// it, every time it is called, and every value reads back the same.
func TestReleaseValueLogs(t *testing.T) {
	dir := t.TempDir()
	skipOnTmpfs(t, dir)
	s, err := DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := func(i int) []byte {
		v := make([]byte, 3<<19) // 1.5 MiB
		rand.NewChaCha8([32]byte{byte(i), 'v'}).Read(v)
		return v
	}
	resident := func() (n int64) {
		for _, b := range residentOf(t, s.dir, ".vlog") {
			n += b
		}
		return n
	}
	for round := range 2 { // given back again after more is written
		for i := range 6 {
			if err := s.Update(func(txn *Txn) error { return txn.Set(Key(PrefixRelay, 2, U64(uint64(6*round+i))), big(6*round+i)) }); err != nil {
				t.Fatal(err)
			}
		}
		before := resident()
		if before < 8<<20 {
			t.Fatalf("only %d bytes of the value log resident after writing 9 MiB to it: nothing to test", before)
		}
		if err := s.ReleaseValueLogs(); err != nil {
			t.Fatal(err)
		}
		if after := resident(); after > before/4 {
			t.Errorf("round %d: value log resident: %d bytes before, %d after; want most given back", round, before, after)
		}
	}
	if err := s.View(func(txn *Txn) error {
		for i := range 12 {
			item, err := txn.Get(Key(PrefixRelay, 2, U64(uint64(i))))
			if err != nil {
				return fmt.Errorf("value %d: %w", i, err)
			}
			if err := item.Value(func(v []byte) error {
				if !bytes.Equal(v, big(i)) {
					return fmt.Errorf("value %d changed", i)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// The tables a store had when it opened are never given back: only what
// this process wrote since.
func TestReleasePagesLeavesTheStoreAsOpened(t *testing.T) {
	dir := t.TempDir()
	s, err := DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	writeRecords(t, s, 4<<10)
	if err := s.Close(); err != nil { // writes the memtable to a table
		t.Fatal(err)
	}
	before, err := filepath.Glob(filepath.Join(dir, "badger", "*.sst"))
	if err != nil || len(before) == 0 {
		t.Fatalf("no table written (%v): nothing to test", err)
	}
	if s, err = DefaultSettings().Open(dir, quiet()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mapped, err := s.mappings()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(mapped, func(m mapping) bool { return strings.HasSuffix(m.key, ".sst") }) {
		t.Fatal("no table mapped after open: nothing to test")
	}
	s.released.mu.Lock()
	fresh := s.released.fresh(mapped)
	s.released.mu.Unlock()
	for _, m := range fresh {
		for _, f := range before {
			if strings.HasSuffix(m.key, "/"+filepath.Base(f)) {
				t.Errorf("%s, mapped as the store opened, would be given back", filepath.Base(f))
			}
		}
	}
}

// writeRecords writes records 0 to n-1, each value(i), in one batch.
func writeRecords(t *testing.T, s *DB, n int) {
	t.Helper()
	wb := s.db.NewWriteBatch()
	for i := range n {
		if err := wb.Set(Key(PrefixRelay, 1, U64(uint64(i))), value(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
}

// value is record i's: random, so the tables do not compress much.
func value(i int) []byte {
	var seed [32]byte
	seed[0], seed[1] = byte(i), byte(i>>8)
	v := make([]byte, 1024)
	rand.NewChaCha8(seed).Read(v)
	return v
}

// residentTables is how many bytes of the .sst files under dir are
// resident in this process's mappings, from /proc/self/smaps.
func residentTables(t *testing.T, dir string) int64 {
	var total int64
	for _, n := range residentByMapping(t, dir) {
		total += n
	}
	return total
}

// residentByMapping is residentTables by mapping (address range and file).
func residentByMapping(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	return residentOf(t, dir, ".sst")
}

// residentOf is residentByMapping of the files under dir named *suffix.
func residentOf(t *testing.T, dir, suffix string) map[string]int64 {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"):
			table = ""
			if strings.HasPrefix(f[5], dir+"/") && strings.HasSuffix(f[5], suffix) {
				table = f[0] + " " + f[5]
			}
		case len(f) >= 5 && strings.Contains(f[0], "-"):
			table = "" // an anonymous mapping
		case table != "" && len(f) == 3 && f[0] == "Rss:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			out[table] += kb << 10
		}
	}
	return out
}

// mappingKeys names s's shared mappings of badger's files.
func mappingKeys(t *testing.T, s *DB) []string {
	t.Helper()
	mapped, err := s.mappings()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range mapped {
		keys = append(keys, m.key)
	}
	return keys
}

// settled reports whether badger has flushed a table and no table is
// left in level 0.
func settled(s *DB) bool {
	tables := s.db.Tables()
	for _, t := range tables {
		if t.Level == 0 {
			return false
		}
	}
	return len(tables) > 0
}

func tableIDs(s *DB) []uint64 {
	var ids []uint64
	for _, t := range s.db.Tables() {
		ids = append(ids, t.ID)
	}
	slices.Sort(ids)
	return ids
}

// skipOnTmpfs skips a test of pages given back when dir is on tmpfs, whose
// pages the kernel keeps without swap.
func skipOnTmpfs(t *testing.T, dir string) {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("skipped: the temp dir is on tmpfs, whose pages the kernel keeps without swap")
	}
}
