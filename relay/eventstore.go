package relay

import (
	"context"
	"math"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

// eventstoreReader reads through eventstore's badger backend until outpost's
// own store (package events) replaces it; then this file goes away. The
// backend over-matches tag values and caps limits its own way, so every
// result is checked against the whole filter here and short pages are
// fetched again, larger.
type eventstoreReader struct {
	be eventstore.Store
}

func (s eventstoreReader) Query(ctx context.Context, f nostr.Filter, skip func(Meta) bool, yield func(Meta, []byte) bool) error {
	if f.LimitZero {
		return nil
	}
	now := nostr.Now()
	seen := map[string]struct{}{}
	yielded := 0
	// The negentropy flag lifts the backend's own limit (1000, and 250 for
	// anything above it).
	ctx = eventstore.SetNegentropy(ctx)
	for fetch := f.Limit; ; fetch *= 2 {
		q := f
		q.Limit = fetch
		ch, err := s.be.QueryEvents(ctx, q)
		if err != nil {
			return err
		}
		got, done := 0, false
		for ev := range ch { // drained to the end so the backend's transaction ends
			got++
			if done {
				continue
			}
			if _, dup := seen[ev.ID]; dup {
				continue
			}
			seen[ev.ID] = struct{}{}
			m := metaOf(ev)
			if m.expired(now) || !f.Matches(ev) || (skip != nil && skip(m)) {
				continue
			}
			raw, err := ev.MarshalJSON()
			if err != nil {
				continue
			}
			yielded++
			done = !yield(m, raw) || (f.Limit > 0 && yielded >= f.Limit)
		}
		if done || fetch == 0 || got < fetch || ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (s eventstoreReader) Count(ctx context.Context, filters []nostr.Filter, skip func(Meta) bool) (int64, error) {
	ids := map[string]struct{}{}
	for _, f := range filters {
		f.Limit, f.LimitZero = 0, false
		err := s.Query(ctx, f, skip, func(m Meta, _ []byte) bool {
			ids[m.ID] = struct{}{}
			return true
		})
		if err != nil {
			return 0, err
		}
	}
	return int64(len(ids)), nil
}

// rejectOverStoreLimits refuses what eventstore's binary encoding cannot
// hold (it would answer "error:" after the policies passed). Only while that
// backend is in use.
func rejectOverStoreLimits(_ context.Context, ev *nostr.Event) (bool, string) {
	if len(ev.Content) > math.MaxUint16 {
		return true, "invalid: content is over 65535 bytes, more than this relay's store holds"
	}
	for _, tag := range ev.Tags {
		for _, v := range tag {
			if len(v) > math.MaxUint16 {
				return true, "invalid: a tag value is over 65535 bytes, more than this relay's store holds"
			}
		}
	}
	return false, ""
}
