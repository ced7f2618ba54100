// Package diskspace watches the free space of the filesystem a directory is
// on, so that outpost stops writing before the disk is full. badger writes
// through memory-mapped files; a write to one on a full disk is a SIGBUS
// that kills the process, not an error it could answer. So writes must stop
// while there is still room for what badger does by itself (flushing its
// memtable, compacting).
//
// The check is a statfs: on a timer, and early when the writes since the
// last one may have used a quarter of the room above the minimum (writers
// say roughly how much they write). Writers never pay for a system call
// otherwise.
package diskspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/ops/tick"
)

// Free is the space on dir's filesystem that an unprivileged process may
// still use, in bytes.
func Free(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Left is the space on dir's filesystem that this process may still use,
// in bytes: Free, or for root, which may also use the blocks a filesystem
// keeps back for it (ext4: 5% by default), every free block. It is what is
// left once another process has filled the disk as far as it could.
func Left(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	if os.Geteuid() == 0 {
		return int64(st.Bfree) * int64(st.Bsize), nil
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Watcher says whether writes to a directory's filesystem may go ahead.
type Watcher struct {
	dir  string
	min  int64
	log  *slog.Logger
	free func(dir string) (int64, error) // Free; a test may replace it
	held *os.File                        // dir as New found it, kept open (nil: not watched for its removal)

	extra  atomic.Int64 // room wanted besides min (see Need)
	low    atomic.Bool
	gone   atomic.Bool  // dir was removed or replaced: writes would go to deleted files
	bytes  atomic.Int64 // free space at the last check
	budget atomic.Int64 // what writes may use before the next check
	mu     sync.Mutex   // one check at a time
	failed bool         // the last check could not stat the directory (under mu)
}

// New watches dir, keeping min bytes free; min 0 turns the watch off. It
// measures once before returning (without logging): on a full disk its
// Status is low from the start.
func New(dir string, min int64, log *slog.Logger) (*Watcher, error) {
	held, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	w := &Watcher{dir: dir, min: min, log: log, free: Free, held: held}
	if min <= 0 {
		return w, nil
	}
	free, err := w.free(dir)
	if err != nil {
		return nil, err
	}
	w.set(free)
	return w, nil
}

// Run checks every interval until ctx ends.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	tick.Every(ctx, interval, func() bool { w.Check(); return true })
}

// Allow says whether a write of about n bytes may go ahead. It is false
// while free space is below the minimum. It makes no system call unless the
// writes since the last check may have used up their budget.
func (w *Watcher) Allow(n int64) bool {
	if w.gone.Load() {
		return false
	}
	if w.min <= 0 {
		return true
	}
	if w.low.Load() {
		return false
	}
	if w.budget.Add(-n) < 0 {
		w.Check()
	}
	return !w.low.Load()
}

// Check measures the free space now, logs a change of state once, and
// reports whether writes are allowed. It also looks whether the directory
// is still the one New found: a data dir deleted (or deleted and made
// again) under a running outpost leaves badger writing to files no longer
// there, which would acknowledge writes that are lost at the next start.
// Writes stop for good then; only a restart can open a database again.
func (w *Watcher) Check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone.Load() || w.removed() {
		return false
	}
	if w.min <= 0 {
		return true
	}
	free, err := w.free(w.dir)
	if err != nil {
		// Keep the last state: a failed statfs says nothing about space.
		if !w.failed {
			w.log.Error("cannot measure free disk space", "dir", w.dir, "err", err)
		}
		w.failed = true
		return !w.low.Load()
	}
	w.failed = false
	wasLow := w.low.Load()
	low := w.set(free)
	switch {
	case low && !wasLow:
		w.log.Warn("disk space low: refusing writes until space is freed (reads still work)",
			"dir", w.dir, "free", settings.Bytes(free), "min_free", settings.Bytes(w.min), "also_needed", settings.Bytes(w.extra.Load()), "setting", "--min-free-space, OUTPOST_MIN_FREE_SPACE")
	case !low && wasLow:
		w.log.Info("disk space recovered: accepting writes again", "dir", w.dir, "free", settings.Bytes(free), "min_free", settings.Bytes(w.min))
	}
	return !low
}

// removed reports (and logs, once) that dir is not the directory New found.
// That one is held open, so its inode cannot be reused by a directory made
// again at the same path. A failed stat other than "not there" says nothing.
func (w *Watcher) removed() bool {
	if w.held == nil {
		return false
	}
	held, err := w.held.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(w.dir)
	if err == nil && os.SameFile(now, held) || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	w.gone.Store(true)
	w.log.Error("the data dir was deleted or replaced while outpost ran: writes are refused until outpost is restarted (what it held is gone unless a backup is restored)", "dir", w.dir)
	return true
}

// set records a measurement and says whether space is low now. Writes
// resume only with some room to spare, so that a compaction freeing a few
// megabytes does not turn them on and off; until the next check they may
// use a quarter of the room above the minimum (badger writes a record to
// its log, then to a table, and again when it compacts).
func (w *Watcher) set(free int64) (low bool) {
	need := w.min + w.extra.Load()
	low = free < need || (w.low.Load() && free < need+w.min/8)
	w.bytes.Store(free)
	w.budget.Store(max(0, (free-need)/4))
	w.low.Store(low)
	return low
}

// Need asks for n bytes of room besides the minimum (0: none) before
// writes go ahead, and checks at once when that changes. The store asks
// for the room of a file it must make before badger may write more.
func (w *Watcher) Need(n int64) {
	if w.extra.Swap(n) != n {
		w.Check()
	}
}

// Close lets go of the directory: from then on Check finds it not removed.
func (w *Watcher) Close() error {
	if w.held == nil {
		return nil
	}
	return w.held.Close()
}

// Status is the watcher's state as of its last check.
type Status struct {
	Low  bool  // writes are refused: too little free space
	Gone bool  // writes are refused: the directory was removed (see Check)
	Free int64 // bytes free at the last check
	Min  int64 // bytes kept free; 0 when the watch is off
	Need int64 // bytes wanted besides Min (see Need)
}

// Status reports the state of the last check, without checking.
func (w *Watcher) Status() Status {
	return Status{Low: w.low.Load(), Gone: w.gone.Load(), Free: w.bytes.Load(), Min: w.min, Need: w.extra.Load()}
}
