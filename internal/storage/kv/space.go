package kv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/diskspace"
)

// ErrStorageFull is every write's answer while the data dir's filesystem
// has less free space than Settings.MinFreeSpace: a 507 over REST. Reads go
// on, and writes resume by themselves once space is freed.
var ErrStorageFull = outpost.Errorf(outpost.StorageFull, "insufficient_storage",
	"the server is low on disk space and accepts no writes until space is freed; reads still work")

// ErrDataDirGone is every write's answer once the data dir was deleted or
// replaced under a running outpost (see diskspace.Watcher.Check): a 507
// over REST like ErrStorageFull (RFC 4918: the server cannot store what
// the request needs), with its own code, until the operator restarts it.
var ErrDataDirGone = outpost.Errorf(outpost.StorageFull, "storage_unavailable",
	"the server's data directory was removed while it ran; it accepts no writes until it is restarted")

// FailureLevel is the level at which background work logs a failed write:
// Error, except ErrStorageFull, which is expected while the disk is low —
// the store warned once when writes stopped, work that checked Writable
// before it began may still find them stopped by the time it writes, and
// background work is redone once there is room — so Debug.
func FailureLevel(err error) slog.Level {
	if errors.Is(err, ErrStorageFull) {
		return slog.LevelDebug
	}
	return slog.LevelError
}

// gate says whether a write may go ahead: the free-space watcher agrees,
// and badger's next memtable log is allocated (see memLogs).
type gate struct {
	space *diskspace.Watcher // nil: a database in memory (OpenInMemory)
	logs  *memLogs           // nil: allocation ahead is off
}

// allow says whether a write of about n bytes may go ahead.
func (g gate) allow(n int64) bool { return (g.space == nil || g.space.Allow(n)) && g.logs.Ready() }

// writeRefusal is why g refuses writes.
func (g gate) writeRefusal() error {
	if g.space.Status().Gone {
		return ErrDataDirGone
	}
	return ErrStorageFull
}

// Settings are the database's operator settings, bound by cmd/outpost to the
// flag each tag names and its OUTPOST_* twin. Start from DefaultSettings.
type Settings struct {
	MinFreeSpace settings.Bytes `flag:"min-free-space" usage:"free space kept on the data dir's filesystem: below it writes are refused (REST 507, relay OK false) while reads go on; 0 turns the check off, and a full disk then kills outpost (SIGBUS)"`
	CacheSize    settings.Bytes `flag:"cache-size" usage:"memory for reads: recently read events, served again without a database lookup; more keeps a larger working set of a big relay in memory (at least 1MiB; 0: the default)"`

	WarmStore bool `flag:"warm-store" usage:"as outpost starts, read the database's tables into the page cache in the background, upper levels first, up to half the memory available then (a quarter of the container's limit), so that the first reads after a restart need not wait for the disk; a page counts in outpost's RSS only once a read maps it, and the kernel takes these pages back under memory pressure like any cached file"`

	RSSLimit settings.Bytes `flag:"rss-limit" usage:"resident memory (RSS) above which outpost unmaps the pages of the database's tables it has mapped, the deepest level's first, until RSS is an eighth under the limit (it looks every 10 ms); the pages stay in the kernel's page cache and a read maps them again without the disk, at more CPU per read (how much more: docs/operating.md#memory); it cannot lower the rest of RSS (the Go heap: see --memory-limit); 0: off, table pages stay mapped once read, for the kernel to reclaim under memory pressure like any page cache"`

	// Container is the memory limit of the container outpost runs in (0:
	// none); WarmStore reads a quarter of it at most. cmd/outpost finds it.
	Container settings.Bytes

	memTable    int64         // badger's memtable size (0: memTableSize); only BenchmarkIngest changes it
	keepWritten bool          // leave the tables badger writes mapped (see dropWritten); only tests set it
	vlogGCEvery time.Duration // how often the value logs are collected (0: vlogGCEvery); only tests set it
}

// DefaultSettings keep 256 MiB free: more than twice what badger may write
// once writes stop (see memTableSize), and little on any disk outpost is
// likely to be given. They warm the store as it opens (see warmStore).
func DefaultSettings() Settings {
	return Settings{MinFreeSpace: 256 << 20, CacheSize: defaultCacheSize, WarmStore: true}
}

// minRSSLimit is the least RSSLimit may be, other than 0: below it the Go
// heap and the binary alone keep outpost over it, and boundRSS would unmap
// every table it reads.
const minRSSLimit = 128 << 20

// boundEvery is how often boundRSS looks at outpost's resident memory:
// reading it takes about 1.5 µs, and REQs from 16 connections mapped 184
// MiB of tables in 65 ms (each page fault maps the pages around it too), so
// every 100 ms let RSS pass a limit of 448 MiB by 170 MiB, every 10 ms by
// up to 88 (on a 5M-event store).
const boundEvery = 10 * time.Millisecond

// dropEvery is how often dropWritten looks for tables badger wrote: a
// memtable flush or a compaction lists its tables at once, and listing
// them takes some tens of µs, so RSS passes what the heap and the reads
// hold by what badger wrote in the last 100 ms at most, besides what a
// compaction writes before it lists its tables.
const dropEvery = 100 * time.Millisecond

// defaultCacheSize is CacheSize when it is not set (0, as in a Settings
// literal).
const defaultCacheSize = 32 << 20

// cacheSize is CacheSize, or its default when unset.
func (s Settings) cacheSize() int { return int(cmp.Or(s.CacheSize, defaultCacheSize)) }

// minFreeSpace is the least MinFreeSpace may be, other than 0: twice a
// memtable, which badger flushes to a table at Close. It suits only a small
// data dir (a few memtables' worth of data), as in the tests.
const minFreeSpace = 2 * memTableSize

// Valid checks the settings, naming each bad one.
func (s Settings) Valid() error {
	if s.MinFreeSpace != 0 && s.MinFreeSpace < minFreeSpace {
		return settings.Errorf("min-free-space", "must be 0 (off) or at least %v: badger needs room to flush its memtable once writes stop", settings.Bytes(minFreeSpace))
	}
	if s.CacheSize != 0 && s.CacheSize < 1<<20 {
		return settings.Errorf("cache-size", "must be at least 1MiB (0: the default, %v)", settings.Bytes(defaultCacheSize))
	}
	if s.RSSLimit != 0 && s.RSSLimit < minRSSLimit {
		return settings.Errorf("rss-limit", "must be 0 (off) or at least %v", settings.Bytes(minRSSLimit))
	}
	return nil
}

// checkEvery is how often free space is measured, besides when the writes
// may have used up the room measured last (see diskspace).
const checkEvery = time.Second

// recordCost is what Update charges the watcher for a transaction whose size
// it cannot see: more than most domain records take.
const recordCost = 4 << 10

// Refused says why a write of about n bytes may not go ahead now
// (ErrStorageFull, ErrDataDirGone), or nil if it may.
func (d *DB) Refused(n int64) error {
	if d.gate.allow(n) {
		return nil
	}
	return d.gate.writeRefusal()
}

// Writable reports whether d takes writes now, charging nothing against
// the watcher's budget: background work whose results could not be stored
// (a mint check, a deposit completed at the mint) waits while it is false.
func (d *DB) Writable() bool { return d.Refused(0) == nil }

// HealthChecks are the store's part of /health: whether it takes writes,
// and the free space it last measured.
type HealthChecks struct {
	Writable     bool   `json:"writable"`
	FreeBytes    *int64 `json:"free_bytes"`     // null when the check is off
	MinFreeBytes int64  `json:"min_free_bytes"` // 0: the check is off
}

// besides says what the watcher wants besides the minimum, if anything.
func besides(need int64) string {
	if need == 0 {
		return ""
	}
	return fmt.Sprintf(" and the %v of badger's next memtable log", settings.Bytes(need))
}

// Health reports the watcher's last measurement; it measures nothing
// itself. It is degraded while writes are refused, down when the database
// does not answer.
func (d *DB) Health(ctx context.Context) outpost.Health[HealthChecks] {
	st := d.gate.space.Status()
	h := outpost.NewHealth(outpost.Version, HealthChecks{Writable: !st.Low && d.gate.logs.Ready(), MinFreeBytes: st.Min})
	if st.Min > 0 {
		h.Checks.FreeBytes = &st.Free
	}
	switch err := d.Check(ctx); {
	case err != nil:
		h.Checks.Writable = false
		h.Fail(outpost.HealthDown, "the database does not answer: "+err.Error())
	case st.Gone:
		h.Checks.Writable = false
		h.Fail(outpost.HealthDown, "the data dir was deleted or replaced while outpost ran: writes are refused; restart outpost")
	case st.Low:
		h.Fail(outpost.HealthDegraded, fmt.Sprintf("%v free on the data dir's filesystem, less than the %v kept free (--min-free-space, OUTPOST_MIN_FREE_SPACE)%s: writes are refused until space is freed",
			settings.Bytes(st.Free), settings.Bytes(st.Min), besides(st.Need)))
	case !h.Checks.Writable:
		h.Fail(outpost.HealthDegraded, "badger's next memtable log could not be allocated (the disk is full?): writes are refused until it can be; see the log")
	}
	return h
}

// EventCache is the size of the event store's cache of events (see
// events.Store.Cache): all of CacheSize, badger having no block cache (see
// badgerOptions).
func (s Settings) EventCache() int { return s.cacheSize() }
