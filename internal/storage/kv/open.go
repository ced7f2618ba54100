package kv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/diskspace"
)

// ErrLocked is returned by Open when another process holds the database.
var ErrLocked = errors.New("the database is in use by another outpost process")

// DB is the database.
type DB struct {
	db *badger.DB

	gate         gate               // what every write asks first (see space.go)
	dir          string             // badger's directory as /proc/self/maps names it (see ReleasePages)
	released     releasedMappings   // the mappings ReleasePages gave back
	stop         context.CancelFunc // stops the watcher and watch
	watching     chan struct{}      // closed when watch has stopped
	warming      chan struct{}      // closed when warmStore has stopped, or at once without it
	bounding     chan struct{}      // closed when boundRSS has stopped, or at once without it
	dropping     chan struct{}      // closed when dropWritten has stopped, or at once without it
	collecting   chan struct{}      // closed when collectValueLogs has stopped
	dropsWritten bool               // dropWritten runs (see ReleasePages)
	reserve      *reserve           // the disk reserve, nil without MinFreeSpace (see reserve.go)

	closeWait time.Duration // how long Close waits (0: closeWait; tests shorten it)
}

// Open opens (or creates) <dataDir>/badger. It refuses to when the
// filesystem has less than MinFreeSpace free: badger writes as it opens, and
// on a full disk it dies of SIGBUS doing so.
func (s Settings) Open(dataDir string, log *slog.Logger) (_ *DB, err error) {
	path := filepath.Join(dataDir, "badger")
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, err
	}
	space, err := diskspace.New(path, int64(s.MinFreeSpace), log.With("component", "diskspace"))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			space.Close()
		}
	}()
	if st := space.Status(); st.Low {
		return nil, fmt.Errorf("%w: %s has %v free, less than the %v outpost keeps free (--min-free-space, OUTPOST_MIN_FREE_SPACE); free some space and start again",
			ErrStorageFull, dataDir, settings.Bytes(st.Free), settings.Bytes(st.Min))
	}
	if removed, err := removeEmptyLogs(path); err != nil {
		return nil, fmt.Errorf("open badger at %s: %w", path, err)
	} else if len(removed) > 0 {
		log.Info("removed empty badger logs: memtable logs made ahead by outpost (see memLogs), or logs left by a kill while badger made one", "files", removed)
	}
	db, err := openBadger(s.badgerOptions(path, log))
	if err != nil {
		if isLockError(err) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("open badger at %s: %w", path, err)
	}
	g := gate{space: space}
	var res *reserve
	if s.MinFreeSpace > 0 { // off means as before: a full disk kills outpost
		if g.logs, err = openMemLogs(path, 2*memTableSize, space, log.With("component", "memlogs")); err != nil {
			db.Close()
			return nil, err
		}
		res = newReserve(filepath.Join(dataDir, reserveName), reserveSize, int64(s.MinFreeSpace), log.With("component", "diskspace"))
	}
	ctx, stop := context.WithCancel(context.Background())
	go space.Run(ctx, checkEvery)
	watching := make(chan struct{})
	go watch(ctx, path, g, res, watching)
	d := &DB{db: db, gate: g, stop: stop, watching: watching, dir: realPath(path), warming: make(chan struct{}), bounding: make(chan struct{}), dropping: make(chan struct{}), collecting: make(chan struct{}), reserve: res}
	d.keepOpened()
	if s.WarmStore {
		plan := d.planWarm(s.warmBudget())
		go func() {
			defer close(d.warming)
			warmStore(ctx, plan, log.With("component", "badger"))
		}()
	} else {
		close(d.warming)
	}
	if s.RSSLimit > 0 {
		go func() {
			defer close(d.bounding)
			d.boundRSS(ctx, int64(s.RSSLimit), boundEvery, log.With("component", "badger"))
		}()
	} else {
		close(d.bounding)
	}
	if d.dropsWritten = !s.keepWritten; d.dropsWritten {
		go func() {
			defer close(d.dropping)
			d.dropWritten(ctx, dropEvery, log.With("component", "badger"))
		}()
	} else {
		close(d.dropping)
	}
	go func() {
		defer close(d.collecting)
		d.collectValueLogs(ctx, cmp.Or(s.vlogGCEvery, vlogGCEvery), log.With("component", "badger"))
	}()
	return d, nil
}

// OpenInMemory opens a database held in memory only, for the tests of the
// packages above: small memtables, and values over 4 KiB in the value log
// as a big database has them. Its writes always go ahead.
func OpenInMemory() (*DB, error) {
	db, err := badger.Open(badger.DefaultOptions("").WithInMemory(true).WithLogger(nil).
		WithMemTableSize(4 << 20).WithCompression(options.None).WithBlockCacheSize(0).WithNumMemtables(2).WithValueThreshold(4 << 10))
	if err != nil {
		return nil, err
	}
	stopped := make(chan struct{}) // nothing watches or warms a database in memory
	close(stopped)
	return &DB{db: db, stop: func() {}, watching: stopped, warming: stopped, bounding: stopped, dropping: stopped, collecting: stopped}, nil
}

// memTableSize is badger's memtable: 16 MiB instead of its default 64 MiB.
// badger memory-maps every file it writes (memtable logs, tables, value
// logs), and a write to a mapping on a full disk is a SIGBUS, so what it
// may still write after our writes stop must fit in MinFreeSpace: its
// memtables flushed to tables (at the latest at Close), and the level-0
// compaction that follows (five tables of a memtable each). With 64 MiB
// memtables that is some 400 MB; with 16 MiB about 100 MB, for slower
// sustained ingest (BenchmarkIngest; see docs/operating.md, "Running out of disk").
const memTableSize = 16 << 20

// numMemtables is how many memtables badger keeps at most: the one being
// written and two being flushed (badger's default, five, let the heap hold
// 64 MiB arenas by the five with its default size).
const numMemtables = 3

// badgerOptions are badger's defaults sized for a relay on a small machine.
// badger's defaults (64 MiB memtables, five of them, a 256 MiB block cache)
// let a relay that had taken 200,000 notes hold 520 MiB of anonymous memory:
// the memtables' arenas and the cache are Go heap, and the collector lets
// the heap grow to twice what is live. Here: small memtables (see
// memTableSize), at most numMemtables, tables without compression (see
// below), no metrics (badger's expvar counters cost 6% of a REQ's CPU), and
// 64 MiB value logs: badger creates each one as a sparse file of twice that
// size (2 GiB by default), which misleads anyone reading ls or checking
// quotas, and only values over 1 MiB are written to it.
//
// Tables are written uncompressed (badger's default is Snappy). Every
// block a compaction or a cold read takes from a compressed table is
// decompressed into a fresh buffer: 1.6 GB of the 7 GB a relay allocated
// while taking 200,000 events, and the collector's work near the memory
// limit grows with it. Uncompressed, a block is read in place from the
// table's mapping. Taking the first 300,000 events of the 1M query mix from
// 16 connections, outpost took 2,686 events/s uncompressed against 2,007
// compressed, for 17% more disk (350 MB against 300 MB; strfry's store is
// 1.8× outpost's compressed one). Tables written before keep their
// compression, which badger records per table in its manifest, until a
// compaction rewrites them.
//
// There is no block cache: an uncompressed block needs none, and badger
// v4.8.0 would charge each uncompressed block it cached as the rest of its
// table (Block.size counts the capacity of a slice of the mapping;
// dgraph-io/badger#2021), so a cache of a few MiB would hold a handful of
// blocks and churn. All of CacheSize goes to the event store's cache.
func (s Settings) badgerOptions(path string, log *slog.Logger) badger.Options {
	return badger.DefaultOptions(path).
		WithLogger(badgerLogger{log.With("component", "badger")}).
		WithLoggingLevel(badger.WARNING).
		WithMemTableSize(cmp.Or(s.memTable, memTableSize)).
		WithNumMemtables(numMemtables).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithMetricsEnabled(false).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(numCompactors).
		WithNumLevelZeroTables(levelZeroTables).
		WithBaseTableSize(baseTableSize)
}

// baseTableSize is the size of the tables badger's compactions write to
// the level below level 0 (twice that a level further down, and so on): 1
// MiB, not its 2 MiB. It bounds what ingest holds live. Each table being
// written is built whole in memory, in a buffer badger allocates at twice
// the table's size as it starts it, and a compaction writes up to 8 tables
// at once, plus one per part it splits its range into, in each of the two
// compactors; the buffers go back to a pool of 8 that keeps them while
// tables are written. Ingesting 200,000 events of the mix from 16
// connections, 2 MiB tables kept 184 MB of such buffers live at the end
// and 1 MiB tables 112 MB (BENCHMARKS.md §13, issue 53); under the 224 MiB
// memory limit the collector then ran 122 times rather than 1,001. The
// price is twice the tables, each a file badger keeps open and mapped
// (186 after 500,000 events of the mix).
const baseTableSize = 1 << 20

// levelZeroTables is how many tables badger's level 0 may hold before it
// compacts them into the levels below: one, not its five. Every level-0
// table spans the whole key range, so a reader's seek visits each of them
// besides one table per level below; a home feed seeks up to a few hundred
// index ranges, and with five level-0 tables those seeks cost 3–7× what
// they cost on a compacted tree (BenchmarkMix in package events). The price
// is more frequent, smaller compactions while ingesting.
const levelZeroTables = 1

// numCompactors is how many compactions badger runs at once: two, not its
// four. Each holds the tables it writes in memory until they are done, so
// with four, 16 writers saving 200,000 notes kept up to 370 MiB live, with
// two 230 MiB, and a relay took about the same events/s on two cores (see cmd/outpost's defaultMemoryLimit).
const numCompactors = 2

// Abandon closes a database its opener refused (a data dir of another
// format), and deletes the disk reserve if this run made it, so that the
// data dir is left as it was found.
func (d *DB) Abandon() error {
	err := d.Close()
	if r := d.reserve; r != nil && r.held && !r.heldAtOpen {
		os.Remove(r.path)
	}
	return err
}

// Close closes the database; call it after everything else has stopped.
// It waits at most closeWait: badger flushes its memtable to a table as it
// closes and retries a failed flush every second for ever, so on a data
// dir deleted, remounted read-only or otherwise unwritable, Close would
// never return and outpost would ignore SIGTERM until killed. Giving up
// is what a kill would do: what was not flushed is still in badger's log,
// which it replays at the next start (if the data dir is there). For the
// same reason it does not close badger at all when the disk is too full
// for that table (see closeRoom).
func (d *DB) Close() error {
	d.stop()
	<-d.watching // no log made ahead once badger is closed
	<-d.warming
	<-d.bounding // badger's Close unmaps its tables, whatever an iterator holds
	<-d.dropping
	<-d.collecting
	if d.gate.space != nil {
		d.gate.space.Close()
	}
	if err := d.gate.logs.roomToClose(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- d.db.Close() }()
	wait := cmp.Or(d.closeWait, closeWait)
	select {
	case err := <-done:
		if err == nil {
			d.gate.logs.Close()
		}
		return err
	case <-time.After(wait):
		return fmt.Errorf("the database did not close within %v (badger could not write its last table: is %s still there and writable? see the log); "+
			"what was not written is in its log, which it replays at the next start", wait, d.db.Opts().Dir)
	}
}

// closeWait is how long Close waits for badger: a flush of one memtable
// (16 MiB) and the end of running compactions take a second or two; a
// systemd unit's stop timeout (ours: 30 s) comes after the 10 s shutdown.
const closeWait = 15 * time.Second

// realPath is path made absolute with its symbolic links resolved, or ""
// if that fails.
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ""
	}
	return real
}

// Exists reports whether dataDir holds an outpost database.
func Exists(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, "badger", "MANIFEST"))
	return err == nil
}

// Check is a cheap liveness probe for /health.
func (d *DB) Check(ctx context.Context) error {
	if d.db.IsClosed() {
		return errors.New("database closed")
	}
	return d.db.View(func(*badger.Txn) error { return ctx.Err() })
}

// lockWait is how long Open waits for a directory lock held a moment
// after its holder closed badger. badger releases its flock by closing the
// directory's descriptor, not with LOCK_UN, so a child forked meanwhile
// (os/exec, in this process) holds the lock until it execs, which on a
// loaded machine can take a second or more.
const lockWait = 3 * time.Second

// openBadger opens badger, trying again for lockWait while its directory
// is locked.
func openBadger(opts badger.Options) (*badger.DB, error) {
	deadline := time.Now().Add(lockWait)
	for {
		db, err := badger.Open(opts)
		if !isLockError(err) || time.Now().After(deadline) {
			return db, err
		}
		time.Sleep(50 * time.Millisecond) // nothing to wait on: the holder is a child between fork and exec
	}
}

func isLockError(err error) bool {
	// badger reports a held directory lock only as text (dir_unix.go); an
	// EAGAIN from elsewhere in its open (a mapping, say) is another error.
	return err != nil && strings.Contains(err.Error(), "Cannot acquire directory lock")
}

type badgerLogger struct{ log *slog.Logger }

func (l badgerLogger) Errorf(f string, a ...any)   { l.log.Error(fmt.Sprintf(f, a...)) }
func (l badgerLogger) Warningf(f string, a ...any) { l.log.Warn(fmt.Sprintf(f, a...)) }
func (l badgerLogger) Infof(f string, a ...any)    { l.log.Info(fmt.Sprintf(f, a...)) }
func (l badgerLogger) Debugf(f string, a ...any)   { l.log.Debug(fmt.Sprintf(f, a...)) }

// Sizes are badger's own figures, as it last measured them (every minute).
type Sizes struct {
	LSM      int64 // the LSM tree's tables
	ValueLog int64 // the value log files' apparent size
	Tables   []int // the number of tables at each level of the LSM tree
}

// Sizes reports badger's figures; false once the database is closed.
func (d *DB) Sizes() (Sizes, bool) {
	if d.db.IsClosed() {
		return Sizes{}, false
	}
	var s Sizes
	s.LSM, s.ValueLog = d.db.Size()
	for _, lv := range d.db.Levels() {
		s.Tables = append(s.Tables, lv.NumTables)
	}
	return s, true
}
