package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

// limitMemory sets the Go runtime's soft memory limit, unless GOMEMLIMIT
// (which the runtime reads itself) is set or limit is 0.
func limitMemory(limit settings.Bytes) {
	if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(limit))
	}
}

// idleCheck is how often returnIdleMemory looks whether outpost went quiet.
const idleCheck = 10 * time.Second

// returnIdleMemory gives the heap's free memory back to the system once
// outpost goes quiet after work: at the first tick with no garbage
// collection since the one before, if there was one before that. Without
// it, a relay that had just taken 200,000 notes kept 209 MiB of anonymous
// memory for 10 s and 111 MiB a minute later, though 43 MiB was live: the
// runtime keeps up to its last heap goal, set while badger's compactions
// held hundreds of MiB, and an idle process collects only every two
// minutes; with it, 60 MiB from 20 s on. Under steady load collections
// keep coming and it does nothing.
func returnIdleMemory(ctx context.Context, ticks <-chan time.Time, gcCycles func() uint64, release func()) {
	w := idleWatch{last: gcCycles()}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		if w.quietAfterWork(gcCycles()) {
			release()
			w.last = gcCycles() // its own collection is not work
		}
	}
}

// idleWatch tells, tick by tick, when collections stop after work.
type idleWatch struct {
	last uint64 // collections counted at the last tick
	busy bool   // some happened since the last release
}

// quietAfterWork takes the count of collections at a tick and reports
// whether none happened since the last tick though some had before.
func (w *idleWatch) quietAfterWork(cycles uint64) bool {
	quiet := cycles == w.last
	w.last = cycles
	if !quiet {
		w.busy = true
		return false
	}
	was := w.busy
	w.busy = false
	return was
}

// releaseMemory gives back the heap's free memory and asks the kernel to
// reclaim the pages of the store's mapped files (see store.ReleasePages).
func releaseMemory(st *store.Store, log *slog.Logger) {
	debug.FreeOSMemory()
	if _, err := st.ReleasePages(); err != nil {
		log.Debug("could not release the store's mapped pages", "err", err)
	}
}

// gcCycles is how many garbage collections the runtime has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
