package profiles

import (
	"context"
	"slices"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
)

// KindRelayList is NIP-65's relay list: where a user publishes (write)
// and reads.
const KindRelayList = 10002

// maxUserRelays bounds how many relays of a user's own list are asked.
const maxUserRelays = 8

// Latest finds pubkey's newest event of a replaceable kind (such as a
// NIP-61 kind 10019) in the local store, on Relays and then on the write
// relays of the user's newest kind-10002 list (dialled with NetDial).
// Every event is verified; one dated far ahead is ignored. nil when none
// was found; failed lists relays that could not be queried.
func (f *Fetcher) Latest(ctx context.Context, pubkey string, kind int) (ev *nostr.Event, failed []string) {
	filters := nostr.Filters{{Kinds: []int{kind}, Authors: []string{pubkey}, Limit: 1},
		{Kinds: []int{KindRelayList}, Authors: []string{pubkey}, Limit: 1}}
	var found []*nostr.Event
	if f.Local != nil {
		for _, flt := range filters {
			found = append(found, queryLocal(ctx, f.Local, flt)...)
		}
	}
	remote, failed := f.fetchRemote(ctx, f.Relays, nil, pubkey, filters)
	found = append(found, remote...)
	limit := nostr.Timestamp(f.now().Add(maxFuture).Unix())
	if list := newest(found, pubkey, KindRelayList, limit); list != nil {
		more, failedToo := f.fetchRemote(ctx, userRelays(list, f.Relays), f.NetDial, pubkey, filters[:1])
		found, failed = append(found, more...), append(failed, failedToo...)
	}
	return newest(found, pubkey, kind, limit), failed
}

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// newest is the newest of events by pubkey of kind dated up to limit (the
// lower id of equals, as NIP-01 says).
func newest(events []*nostr.Event, pubkey string, kind int, limit nostr.Timestamp) *nostr.Event {
	var best *nostr.Event
	for _, ev := range events {
		if ev.PubKey != pubkey || ev.Kind != kind || ev.CreatedAt > limit {
			continue
		}
		if best == nil || ev.CreatedAt > best.CreatedAt || ev.CreatedAt == best.CreatedAt && ev.ID < best.ID {
			best = ev
		}
	}
	return best
}

// userRelays are the write relays (no marker or "write") of a NIP-65
// list, well-formed, not among asked, at most maxUserRelays.
func userRelays(list *nostr.Event, asked []string) []string {
	var out []string
	for _, t := range list.Tags {
		if len(t) < 2 || t[0] != "r" || (len(t) > 2 && t[2] != "" && t[2] != "write") {
			continue
		}
		u, err := upstream.ValidRelayURL(t[1])
		if err != nil || slices.Contains(asked, u) || slices.Contains(out, u) {
			continue
		}
		if out = append(out, u); len(out) == maxUserRelays {
			break
		}
	}
	return out
}
