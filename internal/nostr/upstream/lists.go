package upstream

import (
	"context"
	"slices"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// byAuthors are filters of kind by the authors list names, in chunks a
// relay will take; none without list.
func byAuthors(ctx context.Context, kind int, list func(context.Context) []string) []nostr.Filter {
	if list == nil {
		return nil
	}
	authors := list(ctx)
	slices.Sort(authors)
	var fs []nostr.Filter
	for chunk := range slices.Chunk(slices.Compact(authors), 250) {
		fs = append(fs, nostr.Filter{Kinds: []int{kind}, Authors: chunk})
	}
	return fs
}

// refilter tells sessions following live that their filters changed (the
// web of trust reached new keys whose contact lists are to be followed):
// each subscribes again and catches up, instead of at its next resync. It
// is a channel closed and replaced at each change, so that every session
// hears it.
type refilter struct {
	mu sync.Mutex
	ch chan struct{}
}

func (r *refilter) wait() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

// Refilter makes every connected session ask Config.Lists (and the rest of
// its filters) again now. It never blocks.
func (s *Syncer) Refilter() {
	s.changed.mu.Lock()
	defer s.changed.mu.Unlock()
	if s.changed.ch != nil {
		close(s.changed.ch)
	}
	s.changed.ch = make(chan struct{})
}
