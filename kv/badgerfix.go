// badger v4 behaviour routed around, so that it does not stop outpost from
// starting; each fix says which version it was seen in.

package kv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// removeEmptyMemtables deletes the memtable logs (*.mem) of length 0 in a
// badger directory, before badger opens it. badger creates a memtable's
// log and then sizes it; a kill -9 between the two leaves an empty one,
// which holds nothing, and badger v4.8.0 then refuses to open the
// directory once ("while opening fid: N err: Create a new file") though
// it would the next time. It holds badger's lock on the directory while it
// looks, so it never touches the log another process is making; when
// another holds the lock it does nothing (badger.Open will say so). It
// returns the names it removed.
func removeEmptyMemtables(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close() // releases the lock
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, err
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".mem") {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
