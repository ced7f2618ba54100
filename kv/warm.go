package kv

import (
	"context"
	"log/slog"
	"time"
)

// warmStore reads the tables of the store as it opened into outpost's
// mappings of them, in the background (see Settings.WarmStore), and logs
// what it read. A restarted relay otherwise reads each page of them from
// the disk the first time a REQ needs it, once the kernel has let the page
// cache go while no process had the tables mapped (on the VM of
// BENCHMARKS.md, 28 MB of a 1M-event store's 1.1 GB of tables were still
// cached five minutes after the relay stopped). Read in order, the store
// comes back at the disk's speed.
func (d *DB) warmStore(ctx context.Context, budget int64, log *slog.Logger) {
	start := time.Now()
	read, tables, total, err := d.warm(ctx, budget)
	if ctx.Err() != nil {
		return // outpost is stopping
	}
	if err != nil {
		log.Warn("could not read the store's tables into memory at start: the first reads go to the disk", "err", err)
		return
	}
	log.Info("read the store's tables into memory", "bytes", read, "tables", tables, "of_bytes", total, "budget", budget, "took", time.Since(start).Round(time.Millisecond))
}

// warmBudget is how much of the store WarmStore reads at most: half the
// memory available (MemAvailable), and a quarter of the container's limit,
// which the page cache counts against.
func (s Settings) warmBudget() int64 {
	b := memAvailable() / 2
	if s.Container > 0 {
		b = min(b, int64(s.Container)/4)
	}
	return b
}
