package kv

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// An empty memtable log, as a kill -9 leaves it, stops badger from opening
// the directory; once it is removed badger opens with everything it held.
func TestRemoveEmptyMemtables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := badger.DefaultOptions(dir).WithLogger(nil)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	empty := filepath.Join(dir, "000099.mem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if db, err := badger.Open(opts); err == nil {
		db.Close()
		t.Log("badger opened beside an empty memtable log: the fix may no longer be needed")
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil { // the failed open sized it
		t.Fatal(err)
	}

	removed, err := removeEmptyLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"000099.mem"}) {
		t.Fatalf("removed %v, want the empty 000099.mem", removed)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, _ := e.Info(); filepath.Ext(e.Name()) == ".mem" && info.Size() == 0 {
			t.Errorf("%s left empty", e.Name())
		}
	}
	db, err = badger.Open(opts)
	if err != nil {
		t.Fatalf("open after the fix: %v", err)
	}
	defer db.Close()
	if err := db.View(func(txn *badger.Txn) error { _, err := txn.Get([]byte("k")); return err }); err != nil {
		t.Errorf("the record written before: %v", err)
	}
	if removed, err := removeEmptyLogs(filepath.Join(dir, "missing")); err != nil || removed != nil {
		t.Errorf("missing dir: %v, %v", removed, err)
	}
}

// While badger holds the directory, nothing is removed: the empty log may
// be one it is making.
func TestRemoveEmptyMemtablesLeavesAnOpenDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	empty := filepath.Join(dir, "000099.mem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, err := removeEmptyLogs(dir); err != nil || removed != nil {
		t.Fatalf("removed %v (err %v) from a database in use", removed, err)
	}
	if _, err := os.Stat(empty); err != nil {
		t.Fatalf("the empty log is gone: %v", err)
	}
}

// A value log of length 0, as a kill -9 leaves it while badger makes the
// one it makes at every start (created, not yet sized) or deletes the one
// the start before made (truncated, not yet unlinked), stops badger from
// opening the directory ("Open existing file: …vlog err: Create a new
// file"); it holds nothing, so Open removes it and opens with everything
// the database held, its values in older value logs among it.
func TestOpenBesideEmptyValueLog(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "badger")
	opts := badger.DefaultOptions(dir).WithLogger(nil).WithValueThreshold(1 << 10)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 4<<10) // in the value log
	for k, v := range map[string][]byte{"small": []byte("v"), "big": big} {
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(k), v) }); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for range 2 { // each start makes a value log
		if db, err = badger.Open(opts); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	slices.Sort(vlogs)
	if len(vlogs) < 3 {
		t.Fatalf("value logs %v", vlogs)
	}
	deleting := vlogs[len(vlogs)-2] // empty: the next start deletes it
	if err := os.Truncate(deleting, 0); err != nil {
		t.Fatal(err)
	}
	var fid int
	fmt.Sscanf(filepath.Base(vlogs[len(vlogs)-1]), "%d.vlog", &fid)
	making := filepath.Join(dir, fmt.Sprintf("%06d.vlog", fid+1))
	if err := os.WriteFile(making, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	d, err := DefaultSettings().Open(dataDir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open beside an empty value log: %v", err)
	}
	defer d.Close()
	err = d.db.View(func(txn *badger.Txn) error {
		for k, want := range map[string]int{"small": 1, "big": len(big)} {
			it, err := txn.Get([]byte(k))
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if v, err := it.ValueCopy(nil); err != nil || len(v) != want {
				return fmt.Errorf("%s: %d bytes, %v", k, len(v), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the records written before: %v", err)
	}
}
