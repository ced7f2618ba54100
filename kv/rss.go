package kv

import (
	"context"
	"log/slog"
	"time"
)

// boundEvery is how often boundRSS looks at outpost's resident memory:
// reading it takes about 1.5 µs, and REQs from 16 connections mapped 184
// MiB of tables in 65 ms (each page fault maps the pages around it too), so
// every 100 ms let RSS pass a limit of 448 MiB by 170 MiB, every 10 ms by
// up to 88 (on a 5M-event store).
const boundEvery = 10 * time.Millisecond

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
	stat, err := openStatm()
	if err != nil {
		log.Warn("cannot read outpost's resident memory: the store's mapped pages are left to the kernel", "err", err)
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
			log.Warn("cannot read outpost's resident memory: the store's mapped pages are left to the kernel", "err", err)
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
