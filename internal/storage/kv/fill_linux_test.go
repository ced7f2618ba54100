package kv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// Writes already under way when another process fills the disk (here: ones
// that skip the gate, as those in flight when the disk fills do) go to
// badger's memtable log, whose pages the kernel could not back on a full
// disk: before the logs were allocated ahead, the first such write died of
// SIGBUS in badger's logFile.writeEntry, taking the test binary with it.
// Now they are written; the gate refuses the next ones once it looks;
// reads go on; Close leaves badger open rather than write a table; and
// everything written is there after a reopen.
func TestMemtableLogOnADiskFilledFromOutside(t *testing.T) {
	disk := testkit.NewFullDisk(t)
	dir, min := disk.Dir, disk.Min
	s, err := Settings{MinFreeSpace: min}.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	raw := func(i int) error { // past the gate, as a write in flight is
		return s.db.Update(func(txn *badger.Txn) error {
			return txn.Set(Key(PrefixRelay, 0xEE, U64(uint64(i))), value(i))
		})
	}
	// 4 MiB before and 4 MiB after the fill: together far from a whole
	// memtable (16 MiB), so badger flushes no table meanwhile.
	const n = 4 << 10
	for i := range n {
		if err := raw(i); err != nil {
			t.Fatal(err)
		}
	}
	fillers := testkit.FillFromOutside(t, dir)
	for i := n; i < 2*n; i++ {
		if err := raw(i); err != nil {
			t.Fatalf("write %d on the full disk: %v", i, err)
		}
	}
	s.gate.space.Check()
	if err := s.Update(func(txn *Txn) error { return txn.Set(Key(PrefixRelay, 0xEF), []byte("x")) }); !errors.Is(err, ErrStorageFull) {
		t.Errorf("a write through the gate on the full disk: %v, want ErrStorageFull", err)
	}
	if err := s.View(func(txn *Txn) error { _, err := txn.Get(Key(PrefixRelay, 0xEE, U64(1))); return err }); err != nil {
		t.Errorf("a read on the full disk: %v", err)
	}
	// Closing flushes the memtable to a table, another write through a
	// mapping: on the full disk Close leaves badger open instead.
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "replays at the next start") {
		t.Errorf("Close on the full disk: %v, want it to leave badger open", err)
	}
	for _, f := range fillers {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Close(); err != nil { // what a restart does, in this process
		t.Fatal(err)
	}
	s, err = Settings{MinFreeSpace: min}.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.View(func(txn *Txn) error {
		for i := range 2 * n {
			item, err := txn.Get(Key(PrefixRelay, 0xEE, U64(uint64(i))))
			if err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
			if v, _ := item.ValueCopy(nil); !bytes.Equal(v, value(i)) {
				return fmt.Errorf("record %d changed", i)
			}
		}
		return nil
	}); err != nil {
		t.Errorf("after reopening: %v", err)
	}
}

// badger's memtable logs are allocated ahead: after writes enough to move
// badger on to a new memtable, the log it writes and the next one (still
// empty) both hold blocks for all of what badger maps; Close removes the
// next one, which badger never opened.
func TestMemtableLogsAllocatedAhead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Settings{MinFreeSpace: 32 << 20}.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "badger")
	first, _ := written(path)
	wb := s.db.NewWriteBatch()
	for i := range 24 << 10 { // 24 MiB: more than a memtable
		if err := wb.Set(Key(PrefixRelay, 1, U64(uint64(i))), value(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	const size = 2 * memTableSize
	var cur int
	testkit.WaitFor(t, 10*time.Second, "badger to move on and the next log to be made", func() bool {
		cur, _ = written(path)
		_, err := os.Stat(filepath.Join(path, memLogName(cur+1)))
		return cur > first && err == nil
	})
	for _, tt := range []struct {
		fid  int
		size int64
	}{{cur, size}, {cur + 1, 0}} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(path, memLogName(tt.fid)), &st); err != nil {
			t.Fatal(err)
		}
		if st.Size != tt.size || st.Blocks*512 < size {
			t.Errorf("%s: size %d with %d bytes allocated, want size %d with at least %d", memLogName(tt.fid), st.Size, st.Blocks*512, tt.size, size)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, memLogName(cur+1))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the log made ahead is still there after Close: %v", err)
	}
}

// written is the highest-numbered memtable log in dir that badger has
// opened (its size is no longer 0).
func written(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	last := -1
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".mem")
		fid, err := strconv.Atoi(name)
		if info, ierr := e.Info(); ok && err == nil && ierr == nil && info.Size() > 0 {
			last = max(last, fid)
		}
	}
	return last, nil
}
