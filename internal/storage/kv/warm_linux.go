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

// readChunk is how much readFile reads at once.
const readChunk = 1 << 20

// readFile reads m's file into the page cache, from the disk what is not
// cached, and not into outpost's mappings: a page counts in outpost's RSS
// once a REQ reads it (and boundRSS would unmap it). A table compacted away
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
