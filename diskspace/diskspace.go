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
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outpost-relay/outpost/settings"
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

// Watcher says whether writes to a directory's filesystem may go ahead.
type Watcher struct {
	dir  string
	min  int64
	log  *slog.Logger
	free func(dir string) (int64, error) // Free; a test may replace it

	low    atomic.Bool
	bytes  atomic.Int64 // free space at the last check
	budget atomic.Int64 // what writes may use before the next check
	mu     sync.Mutex   // one check at a time
	failed bool         // the last check could not stat the directory (under mu)
}

// New watches dir, keeping min bytes free; min 0 turns the watch off. It
// measures once before returning (without logging): on a full disk its
// Status is low from the start.
func New(dir string, min int64, log *slog.Logger) (*Watcher, error) {
	w := &Watcher{dir: dir, min: min, log: log, free: Free}
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
	if w.min <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.Check()
		}
	}
}

// Allow says whether a write of about n bytes may go ahead. It is false
// while free space is below the minimum. It makes no system call unless the
// writes since the last check may have used up their budget.
func (w *Watcher) Allow(n int64) bool {
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
// reports whether writes are allowed.
func (w *Watcher) Check() bool {
	if w.min <= 0 {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
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
			"dir", w.dir, "free", settings.Bytes(free), "min_free", settings.Bytes(w.min), "setting", "--min-free-space, OUTPOST_MIN_FREE_SPACE")
	case !low && wasLow:
		w.log.Info("disk space recovered: accepting writes again", "dir", w.dir, "free", settings.Bytes(free), "min_free", settings.Bytes(w.min))
	}
	return !low
}

// set records a measurement and says whether space is low now. Writes
// resume only with some room to spare, so that a compaction freeing a few
// megabytes does not turn them on and off; until the next check they may
// use a quarter of the room above the minimum (badger writes a record to
// its log, then to a table, and again when it compacts).
func (w *Watcher) set(free int64) (low bool) {
	low = free < w.min || (w.low.Load() && free < w.min+w.min/8)
	w.bytes.Store(free)
	w.budget.Store(max(0, (free-w.min)/4))
	w.low.Store(low)
	return low
}

// Status is the watcher's state as of its last check.
type Status struct {
	Low  bool  // writes are refused
	Free int64 // bytes free at the last check
	Min  int64 // bytes kept free; 0 when the watch is off
}

// Status reports the state of the last check, without checking.
func (w *Watcher) Status() Status {
	return Status{Low: w.low.Load(), Free: w.bytes.Load(), Min: w.min}
}
