package kv

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A child forked while badger was open holds its directory lock until it
// execs (badger releases the lock by closing its descriptor): a copy of
// that descriptor, closed a moment after badger is, stands for the child.
// Open waits for it rather than calling the data dir in use.
func TestOpenWaitsForALockAForkHolds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	badgerDir, _ := filepath.EvalSymlinks(filepath.Join(dir, "badger"))
	// Which of badger's descriptors of its directory holds the lock does
	// not matter: a copy of each is kept.
	var held []int
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/self/fd/" + fd.Name()); target == badgerDir {
			n, _ := strconv.Atoi(fd.Name())
			c, err := syscall.Dup(n)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
	}
	if len(held) == 0 {
		t.Fatal("no descriptor of badger's directory to copy")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, func() { // the child's exec, late: the fault itself
		for _, fd := range held {
			syscall.Close(fd)
		}
	})
	db, err = DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatalf("Open while a fork held the lock for 0.5 s: %v", err)
	}
	db.Close()
}
