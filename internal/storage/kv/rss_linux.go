package kv

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
	"golang.org/x/sys/unix"
)

// boundRSS keeps outpost's resident memory under limit as far as the
// store's mapped tables make it up (Settings.RSSLimit): badger reads its
// tables through shared memory maps, and every page a read or a compaction
// touches stays mapped, counted in RSS, until the process unmaps it: a
// relay serving 1M events held 1.1 GB of them (BENCHMARKS.md, scenario
// 10). Once RSS passes limit, unmapTables drops outpost's mappings of
// table blocks, the deepest (oldest) level's first, until RSS is an eighth
// under limit. The pages stay in the kernel's page cache, so a read maps
// them again without the disk, at the cost of a page fault. What it cannot
// lower (the Go heap: see cmd/outpost's memory limit) it leaves, and tries
// again once the file-backed part has grown by an eighth of limit since.
func (d *DB) boundRSS(ctx context.Context, limit int64, every time.Duration, log *slog.Logger) {
	cannotRead := func(err error) {
		log.Warn("cannot read outpost's resident memory: the store's mapped pages are left to the kernel", "err", err)
	}
	stat, err := openStatm()
	if err != nil {
		cannotRead(err)
		return
	}
	defer stat.Close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	target := limit - limit/8
	var floor int64 // file-backed RSS a trim could not take under target; 0: none
	ends := blockEnds{}
	warned := false // once: it would say so every 10 ms
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rss, file, err := stat.resident()
		if err != nil {
			cannotRead(err)
			return
		}
		if rss <= limit || (floor > 0 && file < floor+limit/8) {
			continue
		}
		err = d.unmapTables(ends, func() bool {
			rss, _, err := stat.resident()
			return err == nil && rss > target
		})
		if err != nil && !warned {
			log.Warn("could not unmap some of the store's tables: RSS may stay over --rss-limit", "err", err)
			warned = true
		}
		if rss, file, err = stat.resident(); err != nil {
			continue // the next look says why
		}
		floor = 0
		if rss > target {
			floor = file
		}
	}
}

// statm reads this process's RSS from /proc/self/statm, kept open: read
// again from the start, the kernel writes it anew, in about 1.5 µs where
// opening it each time took 11 µs idle and, in a profile under a load of
// REQs, a hundred times that.
type statm struct {
	f   *os.File
	buf []byte
}

func openStatm() (*statm, error) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return nil, err
	}
	return &statm{f: f, buf: make([]byte, 128)}, nil
}

func (s *statm) Close() error { return s.f.Close() }

// resident is the process's RSS and the file-backed (and shared) part of
// it, in bytes.
func (s *statm) resident() (rss, file int64, err error) {
	n, err := s.f.ReadAt(s.buf, 0)
	if err != nil && err != io.EOF {
		return 0, 0, err
	}
	var size, resident, shared int64
	if _, err := fmt.Sscan(string(s.buf[:n]), &size, &resident, &shared); err != nil {
		return 0, 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	page := int64(os.Getpagesize())
	return resident * page, shared * page, nil
}

// unmapTables drops this process's page mappings of the blocks of the
// store's tables (MADV_DONTNEED), the deepest level's first, for as long as
// more() says so, asked after each unmapBatch bytes of mappings. A shared
// file mapping keeps its contents: the next read maps the pages again, from
// the page cache while the kernel keeps them there. Each table's index and
// bloom filter, at its end, stay mapped: badger reads them in place for
// every lookup in the table (badger maps each table whole, from its
// start). On the 1M-event store of BENCHMARKS.md one author's REQs took
// 545–654 µs of CPU with them mapped and 681–691 without, thread REQs
// the same (two starts each).
//
// It unmaps only tables it holds mapped meanwhile (see withTablesHeld).
func (d *DB) unmapTables(ends blockEnds, more func() bool) error {
	return d.withTablesHeld(func(tables []badger.TableInfo, byFile map[string][]mapping) error {
		slices.SortStableFunc(tables, func(a, b badger.TableInfo) int { return cmp.Compare(b.Level, a.Level) })
		ends.keep(tableSet(tables))
		var batch uintptr
		var errs []error
		for _, t := range tables {
			if batch == 0 && !more() {
				break
			}
			n, err := unmapBlocks(ends, t.ID, byFile[table.IDToFilename(t.ID)])
			errs = append(errs, err)
			if batch += n; batch >= unmapBatch {
				batch = 0
			}
		}
		return errors.Join(errs...)
	})
}

// withTablesHeld calls f with the tables in badger's tree that stay
// mapped, where /proc/self/maps says, until f returns, and this process's
// mappings of badger's files by file name. It holds them with an iterator:
// badger unmaps a table only when its last reference goes, and an iterator
// takes one on every table in the tree as it opens, so the tables listed
// both before and after it opens were in the tree throughout (badger adds
// a table once and removes it once, v4.8.0 never moves one between
// levels). MADV_DONTNEED zeroes a private mapping, so it must never land
// on a range badger unmapped meanwhile and something else mapped (Go's own
// memory): only ranges of these tables may be given to it.
func (d *DB) withTablesHeld(f func(tables []badger.TableInfo, byFile map[string][]mapping) error) error {
	before := tableSet(d.db.Tables())
	txn := d.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	tables := slices.DeleteFunc(d.db.Tables(), func(t badger.TableInfo) bool { return !before[t.ID] })

	mapped, err := d.mappings()
	if err != nil {
		return err
	}
	byFile := make(map[string][]mapping, len(mapped))
	for _, m := range mapped {
		byFile[filepath.Base(m.path)] = append(byFile[filepath.Base(m.path)], m)
	}
	return f(tables, byFile)
}

// unmapBlocks drops the pages of table id's blocks from its mappings ms
// (MADV_DONTNEED), leaving its index and bloom filter mapped, and returns
// how many bytes of mappings it dropped. The table must be held (see
// withTablesHeld).
func unmapBlocks(ends blockEnds, id uint64, ms []mapping) (uintptr, error) {
	page := uintptr(os.Getpagesize())
	var dropped uintptr
	var errs []error
	for _, m := range ms {
		end, err := ends.of(id, m.path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n := min(uintptr(end), m.end-m.start) &^ (page - 1)
		if n == 0 {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, n, unix.MADV_DONTNEED); e != 0 {
			errs = append(errs, fmt.Errorf("madvise %s: %w", m.path, e))
			continue
		}
		dropped += n
	}
	return dropped, errors.Join(errs...)
}

// tableSet is the IDs of tables.
func tableSet(tables []badger.TableInfo) map[uint64]bool {
	ids := make(map[uint64]bool, len(tables))
	for _, t := range tables {
		ids[t.ID] = true
	}
	return ids
}

// unmapBatch is how many bytes of mappings unmapTables drops before it
// asks whether to go on: a table's few MiB may be resident or not, and
// /proc/self/statm is read in microseconds, so not after each.
const unmapBatch = 32 << 20

// blockEnds remembers where each table's blocks end and its index begins,
// by table ID: a table never changes once written.
type blockEnds map[uint64]int64

// of is where the blocks of table id, in the file at path, end.
func (e blockEnds) of(id uint64, path string) (int64, error) {
	if end, ok := e[id]; ok {
		return end, nil
	}
	end, err := blocksEnd(path)
	if err != nil {
		return 0, err
	}
	e[id] = end
	return end, nil
}

// keep forgets the tables not in ids.
func (e blockEnds) keep(ids map[uint64]bool) {
	for id := range e {
		if !ids[id] {
			delete(e, id)
		}
	}
}

// blocksEnd reads where a table's blocks end from its footer, as badger
// lays it out (v4.8.0, table.initIndex): blocks, index, the index's length
// (4 bytes), a checksum, the checksum's length (4 bytes).
func blocksEnd(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	at := fi.Size()
	var b [4]byte
	for _, step := range []string{"checksum", "index"} {
		if _, err := f.ReadAt(b[:], at-4); err != nil {
			return 0, fmt.Errorf("%s: the %s's length: %w", path, step, err)
		}
		at -= 4 + int64(binary.BigEndian.Uint32(b[:]))
		if at < 0 {
			return 0, fmt.Errorf("%s: a %s longer than the table", path, step)
		}
	}
	return at, nil
}
