package kv

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
	"golang.org/x/sys/unix"
)

// planWarm lists outpost's mappings of the store's tables to read within
// budget bytes. Upper levels go first: they are small and hold the newest
// events, which most REQs want. A table that would take the plan past
// budget is passed over.
func (d *DB) planWarm(budget int64) warmPlan {
	p := warmPlan{budget: budget}
	mapped, err := d.mappings()
	if err != nil {
		p.err = err
		return p
	}
	byFile := make(map[string]mapping, len(mapped))
	for _, m := range mapped {
		byFile[filepath.Base(m.path)] = m
	}
	infos := d.db.Tables()
	slices.SortStableFunc(infos, func(a, b badger.TableInfo) int { return cmp.Compare(a.Level, b.Level) })
	for _, t := range infos {
		m, ok := byFile[table.IDToFilename(t.ID)]
		if !ok {
			continue
		}
		size := int64(m.end - m.start)
		p.total += size
		if p.bytes+size <= budget {
			p.tables = append(p.tables, m)
			p.bytes += size
		}
	}
	return p
}

// populateChunk is how much one madvise reads at most: a cancelled warm
// (outpost stopping) waits for one chunk, not a table.
const populateChunk = 8 << 20

// populate faults every page of m into this process's page tables
// (MADV_POPULATE_READ, Linux 5.14), reading from the disk what is not
// cached. It never changes what is mapped, so a range badger unmapped
// meanwhile, or that a new mapping took, comes to no harm.
func populate(ctx context.Context, m mapping) error {
	for at := m.start; at < m.end; at += populateChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, _, e := unix.Syscall(unix.SYS_MADVISE, at, min(populateChunk, m.end-at), unix.MADV_POPULATE_READ)
		switch e {
		case 0:
		case unix.ENOMEM:
			return errUnmapped
		case unix.EINVAL:
			return errors.New("this kernel cannot populate mappings (MADV_POPULATE_READ: Linux 5.14 or later)")
		default:
			return e
		}
	}
	return nil
}

// readChunk is how much readFile reads at once.
const readChunk = 1 << 20

// readFile reads m's file into the page cache, from the disk what is not
// cached, and not into outpost's mappings, where boundRSS would unmap it: a
// page counts in outpost's RSS once a REQ reads it. A table compacted away
// meanwhile is errUnmapped.
func readFile(ctx context.Context, m mapping) error {
	f, err := os.Open(m.path)
	if errors.Is(err, os.ErrNotExist) {
		return errUnmapped
	}
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, readChunk)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := f.Read(buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// memAvailable is the kernel's estimate of the memory available for new
// work without swapping (MemAvailable), or 0 when it cannot be read.
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemAvailable:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(v, []byte("kB")))), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
