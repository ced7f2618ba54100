package wot

import (
	"context"
	"slices"
	"time"
)

// rankPause is the least time between two rank computations: a burst of
// contact lists (a fetch, a flood) costs one computation a second at most,
// and a changed list shows in the rank within about that.
const rankPause = time.Second

// Run computes the rank whenever the graph changed, until ctx ends.
func (w *WoT) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.dirty:
		}
		w.Rerank()
		t.Reset(rankPause)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Rerank computes the rank now. It holds the graph's lock only to copy the
// list headers: lists are replaced whole, never changed in place, so the
// copy stays consistent while Apply goes on.
func (w *WoT) Rerank() {
	w.mu.RLock()
	g := &graph{out: slices.Clone(w.g.out), keys: w.g.keys[:len(w.g.keys):len(w.g.keys)]}
	seeds, gen := slices.Clone(w.seeds), w.gen
	w.mu.RUnlock()
	r := g.rank(seeds)
	w.mu.Lock()
	if gen != w.gen { // the keys have new ids since: compute again
		w.mu.Unlock()
		w.markDirty()
		return
	}
	w.snap.Store(w.snap.Load().withRank(r))
	w.mu.Unlock()
	select {
	case w.ranked <- struct{}{}:
	default:
	}
}
