package kv

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"
)

// errUnmapped: a table was compacted away before warmStore read it all.
var errUnmapped = errors.New("no longer mapped")

// warmPlan is what warmStore reads: outpost's mappings of the tables the
// store had as it opened (see planWarm), and what they add up to.
type warmPlan struct {
	tables []mapping
	bytes  int64 // of tables
	total  int64 // bytes of all the tables mapped
	budget int64
	err    error // the mappings could not be read
}

// warmStore reads the tables of p into the page cache, in the background
// (see Settings.WarmStore), and logs what it read. A restarted relay
// otherwise reads each page of them from the disk the first time a REQ
// needs it, once the kernel has let the page cache go while no process had
// the tables mapped (on the VM of BENCHMARKS.md, 28 MB of a 1M-event
// store's 1.1 GB of tables were still cached five minutes after the relay
// stopped). Read in order, the store comes back at the disk's speed.
//
// It reads them with read(2), not into outpost's mappings of them
// (MADV_POPULATE_READ, as it did until issue 53): populated, every page
// counted in outpost's RSS from the start (852 MiB right after a restart
// on a 500k-event store, more than strfry's), though most of them no REQ
// of the first minutes reads; cached, a REQ maps the pages it reads from
// the cache without the disk (a minor fault; see BENCHMARKS.md §13).
//
// The plan is made as the store opens: a table written since is what this
// process wrote, which ReleasePages gives back, and warming it would undo
// that.
func warmStore(ctx context.Context, p warmPlan, log *slog.Logger) {
	start := time.Now()
	read, tables, err := p.read(ctx)
	if ctx.Err() != nil {
		return // outpost is stopping
	}
	if err = cmp.Or(p.err, err); err != nil {
		log.Warn("could not read the store's tables into memory at start: the first reads go to the disk", "err", err)
		return
	}
	log.Info("read the store's tables into memory", "bytes", read, "tables", tables, "of_bytes", p.total, "budget", p.budget, "took", time.Since(start).Round(time.Millisecond))
}

// read reads the plan's tables and returns how many bytes it read, in
// how many tables: those compacted away meanwhile are not counted.
func (p warmPlan) read(ctx context.Context) (read int64, tables int, err error) {
	for _, m := range p.tables {
		switch err := readFile(ctx, m); {
		case err == errUnmapped:
		case err != nil:
			return read, tables, err
		default:
			read += int64(m.end - m.start)
			tables++
		}
	}
	return read, tables, nil
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
