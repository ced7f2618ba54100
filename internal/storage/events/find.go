package events

import (
	"context"
	"iter"

	"github.com/nbd-wtf/go-nostr"
)

// Find yields the stored events matching f, decoded, as Query finds them:
// exactly, newest first, never an expired one, at most f.Limit when it is
// above 0 (0: no limit). It is how the services read the store. The loop
// runs in the caller's goroutine, inside Query's read transaction, so no
// goroutine or channel carries the events and breaking out ends the read;
// keep its body short. A failure (ctx's error once it ended, or the
// store's) is yielded last, with a nil event: nothing is hidden, and the
// events before it were read.
func (s *Store) Find(ctx context.Context, f nostr.Filter) iter.Seq2[*nostr.Event, error] {
	return func(yield func(*nostr.Event, error) bool) {
		stopped := false
		err := s.Query(ctx, f, nil, func(m Meta, raw []byte) bool {
			ev := &nostr.Event{}
			if err := ev.UnmarshalJSON(raw); err != nil {
				s.log.Error("stored event unreadable", "id", m.IDHex(), "err", err)
				return true
			}
			stopped = !yield(ev, nil)
			return !stopped
		})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}
