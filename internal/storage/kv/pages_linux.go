package kv

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ReleasePages asks the kernel to reclaim the pages of badger's files that
// outpost has mapped and not given back before: the tables, memtable logs
// and value logs written since the last call. badger writes every table
// through a shared memory map and keeps it mapped to read it, so a table
// just written stays resident and counts in outpost's RSS (some 125 MiB
// after 200,000 notes) though nothing has read it yet. Each mapping is
// given back once: pages read again afterwards are what the relay reads,
// and stay for the kernel to manage.
//
// The files badger mapped as it opened are not given back (see keepOpened):
// only what this process wrote. Nor are the tables, unless dropWritten is
// off: it drops a table's blocks from our mappings as badger lists it,
// leaving the pages in the page cache, so what is mapped of a table by
// the time outpost is quiet was read since, and reclaiming it would send
// the next read of it to the disk.
//
// It uses MADV_PAGEOUT, not MADV_DONTNEED: a table badger unmaps between
// our reading /proc/self/maps and the madvise may leave its addresses to
// a new mapping, and MADV_DONTNEED would zero a private one (Go's own
// memory); MADV_PAGEOUT never changes contents, whatever it lands on.
// Dirty pages stay, for the kernel's own writeback (badger syncs each table
// it writes; only the memtable log may have some). It returns how many
// bytes of mappings it advised.
func (d *DB) ReleasePages() (int64, error) {
	mapped, err := d.mappings()
	if err != nil {
		return 0, err
	}
	d.released.mu.Lock()
	defer d.released.mu.Unlock()
	var advised int64
	var errs []error
	for _, m := range d.released.fresh(mapped) {
		if d.dropsWritten && strings.HasSuffix(m.path, ".sst") {
			continue // dropWritten's: what is mapped of a table now was read since
		}
		_, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT)
		switch e {
		case 0:
			advised += int64(m.end - m.start)
			d.released.mark(m)
		case unix.ENOMEM: // badger unmapped it meanwhile
		default:
			errs = append(errs, e)
		}
	}
	return advised, errors.Join(errs...)
}

// keepOpened counts the mappings badger made as it opened the store as
// given back already, so ReleasePages leaves them: they are the store as
// it was, which warmStore reads into them (or, without it, what was read:
// the tables' indexes and bloom filters at open, then what REQs read), and
// MADV_PAGEOUT drops a file's pages from the page cache, not only from
// outpost's mappings. Without this, the first quiet moment after a start
// took 627 MB of a 1M-event store's 941 MB of tables out of the page cache
// (fincore), and the next reads went to the disk.
func (d *DB) keepOpened() {
	mapped, err := d.mappings()
	if err != nil {
		return // ReleasePages will fail the same way
	}
	d.released.mu.Lock()
	defer d.released.mu.Unlock()
	for _, m := range mapped {
		d.released.mark(m)
	}
}

// mappings are this process's shared mappings of badger's files (none
// when its directory is unknown).
func (d *DB) mappings() ([]mapping, error) {
	if d.dir == "" {
		return nil, nil
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	return sharedMappings(maps, d.dir), nil
}

// ReleaseValueLogs writes badger's value logs to disk and asks the kernel
// to reclaim their pages from outpost's mappings, every time it is called:
// badger writes a value over its threshold (1 MiB) through a shared map of
// the value log and keeps the log mapped, so what a writer of such values
// (a follower mirroring its primary's list in pages) wrote stays resident
// and counts in its RSS, 32 MiB at a million bans. The logs are synced
// first so that no page is left dirty for the kernel to skip (6.18
// reclaimed dirty ones too, but reclaim need not write them back); see
// ReleasePages for why it is MADV_PAGEOUT. A value read again later is
// read from the disk, or the page cache.
func (d *DB) ReleaseValueLogs() error {
	if d.dir == "" {
		return nil // in memory, or its directory is unknown
	}
	if err := d.db.Sync(); err != nil {
		return err
	}
	mapped, err := d.mappings()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mapped {
		if !strings.HasSuffix(m.path, ".vlog") {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT); e != 0 && e != unix.ENOMEM {
			errs = append(errs, e) // ENOMEM: badger unmapped it meanwhile
		}
	}
	return errors.Join(errs...)
}
