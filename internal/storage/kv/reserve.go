package kv

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/diskspace"
)

// reserve holds reserveSize bytes of the data dir's filesystem in a file,
// for what badger still writes after another process has filled the disk.
//
// badger writes its tables (memtable flushes, compactions) as it writes its
// logs: a new file, an ftruncate, and a copy into a shared mapping of it
// (table.CreateTable). It makes the file and fills it at once, in its own
// goroutines, so outpost cannot allocate it ahead as it does the logs; a
// table written while the disk has no free block is a SIGBUS. Writes stop
// while free space is below MinFreeSpace, which leaves badger room for what
// it does by itself, unless another process takes that room too. So outpost
// also holds a reserve, and deletes it once the disk is exhausted and the
// filler has stopped (dd stops at ENOSPC): the memtables badger still
// flushes then find blocks. It is made again once there is room for it
// besides MinFreeSpace. A table being written at the very moment the disk
// runs out is not covered: nothing outside badger can be.
type reserve struct {
	path       string
	size       int64
	min        int64 // MinFreeSpace
	log        *slog.Logger
	held       bool
	heldAtOpen bool // an earlier run made it (see DB.Abandon)

	// The filler has stopped (dd stops at ENOSPC) when the space left no
	// longer shrinks: statfs cannot say the disk is exhausted, as ext4
	// keeps blocks back even from root and counts them as free.
	last   int64 // space left at the last poll
	steady int   // polls since it last shrank
}

// steadyPolls is how many polls (pollLow apart) the space left must not
// shrink before the reserve is let go: a filler throttled by the kernel's
// writeback can pause for one.
const steadyPolls = 3

// reserveSize is what badger flushes at most once writes stop: its
// memtables, one being written and two waiting.
const reserveSize = numMemtables * memTableSize

// reserveName is the reserve's file in the data dir.
const reserveName = "disk-reserve"

// newReserve takes over a reserve an earlier run left, or makes one if
// there is room.
func newReserve(path string, size, min int64, log *slog.Logger) *reserve {
	r := &reserve{path: path, size: size, min: min, log: log}
	if fi, err := os.Stat(path); err == nil && fi.Size() == size {
		r.held, r.heldAtOpen = true, true
	}
	return r
}

// poll measures the space left on dir's filesystem, lets the reserve go or
// makes it again, and returns what it measured.
func (r *reserve) poll(dir string) (int64, error) {
	left, err := diskspace.Left(dir)
	if err != nil {
		return 0, err
	}
	if left < r.last {
		r.steady = 0
	} else {
		r.steady++
	}
	r.last = left
	switch {
	case r.held && left < r.min/2 && (r.steady >= steadyPolls || left == 0):
		if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Error("cannot delete the disk reserve", "file", r.path, "err", err)
			return left, nil
		}
		r.held = false
		r.log.Warn("the disk was filled from outside: deleted the disk reserve, for what badger still writes; writes stay refused until space is freed",
			"file", r.path, "size", settings.Bytes(r.size), "left", settings.Bytes(left))
	case !r.held && left >= r.min+r.size+r.min/8:
		// Free, not left: made out of the blocks kept back for root, it
		// would push free space below the minimum and stop writes.
		if free, err := diskspace.Free(dir); err == nil && free >= r.min+r.size+r.min/8 {
			r.held = r.make()
		}
	}
	return left, nil
}

// make writes the reserve file, reporting whether it now holds it.
func (r *reserve) make() bool {
	tmp := r.path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err == nil {
		err = allocateFile(f, r.size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, r.path)
	}
	if err != nil {
		os.Remove(tmp)
		r.log.Debug("cannot make the disk reserve", "file", r.path, "err", err)
		return false
	}
	return true
}

// pollEvery is how often the store looks at badger's memtable logs and the
// space left: a memtable takes far longer to fill, and a disk filled from
// outside is noticed within it. While less than half the minimum is left
// and the reserve is held, it looks every pollLow, to let the reserve go as
// soon as the disk is full.
const (
	pollEvery = 100 * time.Millisecond
	pollLow   = 10 * time.Millisecond
)

// watch polls g's memtable logs and res until ctx ends, then closes done.
// Space left below the minimum has the watcher check at once, so that
// writes stop without waiting for its own timer.
func watch(ctx context.Context, dir string, g gate, res *reserve, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := pollEvery
		if g.logs != nil {
			g.logs.poll()
		}
		if res != nil {
			if left, err := res.poll(dir); err == nil && left < res.min {
				if !g.space.Status().Low {
					g.space.Check()
				}
				if res.held && left < res.min/2 {
					next = pollLow
				}
			}
		}
		t.Reset(next)
	}
}
