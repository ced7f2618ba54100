package kv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestValueLogsCollected: values over badger's threshold (a follower's
// full pages) go to the value logs; once most of a log's values are
// deleted (the pages of a list taken anew), the log is rewritten and its
// file goes, and the values kept read back the same. Without the
// collection the file stayed for good.
func TestValueLogsCollected(t *testing.T) {
	s := DefaultSettings()
	s.vlogGCEvery = 20 * time.Millisecond
	dir := t.TempDir()
	d, err := s.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1<<20+1000) }
	key := func(i int) []byte { return Key(PrefixBanlist, 0xEE, U64(uint64(i))) }
	const n, kept = 70, 10 // 73 MB: past the first 64 MiB log
	for i := range n {
		if err := d.Update(func(txn *Txn) error { return txn.Set(key(i), value(i)) }); err != nil {
			t.Fatal(err)
		}
	}
	first := filepath.Join(dir, "badger", "000001.vlog")
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the values are not in a value log: %v", err)
	}
	for i := range n - kept {
		if err := d.Update(func(txn *Txn) error { return txn.Delete(key(i)) }); err != nil {
			t.Fatal(err)
		}
	}
	// badger counts a log's garbage as compactions drop the deleted
	// values' keys: the memtable is flushed (as DropPrefix does, of a
	// prefix that holds a key) and every level compacted.
	flush := []byte{0xFF, 0xFF}
	if err := d.Update(func(txn *Txn) error { return txn.Set(flush, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := d.db.DropPrefix(flush); err != nil {
		t.Fatal(err)
	}
	if err := d.db.Flatten(2); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the first value log rewritten and removed", func() bool {
		_, err := os.Stat(first)
		return os.IsNotExist(err)
	})
	err = d.View(func(txn *Txn) error {
		for i := n - kept; i < n; i++ {
			it, err := txn.Get(key(i))
			if err != nil {
				return err
			}
			if v, err := it.ValueCopy(nil); err != nil || !bytes.Equal(v, value(i)) {
				t.Errorf("value %d after the collection: %d bytes, %v", i, len(v), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
