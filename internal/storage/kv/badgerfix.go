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

// removeEmptyLogs deletes the memtable logs (*.mem) and value logs
// (*.vlog) of length 0 in a badger directory, before badger opens it.
// badger v4.8.0 creates each such log and then sizes it (z.OpenMmapFile:
// open with O_CREATE, then ftruncate), and deletes one by truncating it to
// 0 and then unlinking it (z.MmapFile.Delete); a kill -9 between the two
// steps leaves an empty one, which holds nothing, and badger then refuses
// to open the directory once ("while opening fid: N err: Create a new
// file", or "Open existing file: …vlog err: Create a new file"), though it
// would the next time, having sized it as it failed. At every start badger
// deletes the value log the last start made (left empty) and makes a new
// one, and it makes and deletes a memtable log every 16 MiB written, so a
// kill during a start or under writes hits one now and then. It holds badger's lock on the
// directory while it looks, so it never touches a log another process is
// making; when another holds the lock it does nothing (badger.Open will
// say so). It returns the names it removed.
//
// What else badger opens is safe from a kill at any instant (see
// docs/operating.md, "After a kill -9"): MANIFEST and KEYREGISTRY are made
// under another name and renamed, a table (*.sst) is written whole before
// the MANIFEST names it and one it does not name is deleted, DISCARD of
// length 0 is taken for new, LOCK is a pid file rewritten at every open.
func removeEmptyLogs(dir string) ([]string, error) {
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
		if !e.Type().IsRegular() || !isLog(e.Name()) {
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

// isLog reports whether name is one of badger's memtable or value logs.
func isLog(name string) bool {
	return strings.HasSuffix(name, ".mem") || strings.HasSuffix(name, ".vlog")
}
