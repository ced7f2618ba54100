package kv

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
)

// dropWritten takes each table badger writes out of outpost's RSS once
// badger lists it: it drops this process's mappings of the table's blocks
// (MADV_DONTNEED; see unmapBlocks), looking every every. badger v4.8.0
// writes a table by copying it whole into a shared mapping of the new file
// (table.CreateTable), syncs it (msync, MS_SYNC) and keeps that mapping to
// read the table, so every page of every table written stayed mapped and
// counted in outpost's RSS until the table was compacted away: while
// ingesting 500,000 events of the mix, 634 MiB of file pages and a peak RSS
// 1.24× strfry's (BENCHMARKS.md §13), though nothing had read them.
//
// What this frees is RSS, not memory the machine gets back: on a shared
// file mapping MADV_DONTNEED removes only the page table entries; the
// pages stay in the kernel's page cache, which keeps or evicts them as
// it does any file's, and a read of the table maps them again from there
// (a minor fault, no disk read). No data can be lost: the table is synced
// before badger lists it, and a dirty page would keep its data in the page
// cache all the same (the kernel carries the dirty bit over as it unmaps).
// The index and bloom filter at each table's end stay mapped, as every
// lookup in the table reads them. The tables the store held as it opened
// are left alone: they are what the warm at start and the reads since
// brought in.
func (d *DB) dropWritten(ctx context.Context, every time.Duration, log *slog.Logger) {
	seen := tableSet(d.db.Tables())
	ends := blockEnds{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	warned := false // once: it would say so at every table
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := d.db.Tables()
		if !hasNew(now, seen) {
			seen = tableSet(now) // forget the tables compacted away
			continue
		}
		next := tableSet(now)
		err := d.withTablesHeld(func(held []badger.TableInfo, byFile map[string][]mapping) error {
			ends.keep(tableSet(held))
			var errs []error
			for _, t := range held {
				if !seen[t.ID] {
					_, err := unmapBlocks(ends, t.ID, byFile[table.IDToFilename(t.ID)])
					errs = append(errs, err)
				}
				next[t.ID] = true // listed since now: dropped here, not again
			}
			return errors.Join(errs...)
		})
		if err != nil && !warned {
			log.Warn("could not drop the mappings of some tables badger wrote: they stay in outpost's RSS until compacted away", "err", err)
			warned = true
		}
		seen = next
	}
}

// hasNew reports whether tables holds one not in seen.
func hasNew(tables []badger.TableInfo, seen map[uint64]bool) bool {
	for _, t := range tables {
		if !seen[t.ID] {
			return true
		}
	}
	return false
}
