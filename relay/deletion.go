package relay

import (
	"context"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
)

// rejectDeleted refuses events their author asked to delete (NIP-09), by id
// or, for replaceable and addressable events, by address up to the time of
// the request. khatru v0.19.1 means to, but it filters with the tag keys
// "#e" and "#a", which match nothing.
func (r *Relay) rejectDeleted(ctx context.Context, ev *nostr.Event) (bool, string) {
	if ev.Kind == 5 {
		return false, ""
	}
	f := nostr.Filter{Kinds: []int{5}, Authors: []string{ev.PubKey}, Tags: nostr.TagMap{"e": {ev.ID}}, Limit: 1}
	if r.exists(ctx, f) {
		return true, "blocked: this event was deleted by its author"
	}
	if nostr.IsReplaceableKind(ev.Kind) || nostr.IsAddressableKind(ev.Kind) {
		addr := fmt.Sprintf("%d:%s:%s", ev.Kind, ev.PubKey, ev.Tags.GetD())
		since := ev.CreatedAt
		f := nostr.Filter{Kinds: []int{5}, Authors: []string{ev.PubKey}, Tags: nostr.TagMap{"a": {addr}}, Since: &since, Limit: 1}
		if r.exists(ctx, f) {
			return true, "blocked: this event was deleted by its author"
		}
	}
	return false, ""
}

// exists reports whether the store holds an event matching f.
func (r *Relay) exists(ctx context.Context, f nostr.Filter) bool {
	if !r.gate.enter() {
		return false
	}
	defer r.gate.exit()
	ch, err := r.store.Events.QueryEvents(ctx, f)
	if err != nil {
		return false
	}
	found := false
	for range ch { // drain, so the store's read transaction ends
		found = true
	}
	return found
}
