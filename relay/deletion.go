package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mailru/easyjson"
	"github.com/nbd-wtf/go-nostr"
)

// NIP-09. The relay processes deletion requests itself, never as khatru
// v0.19.1 does: its handler lets a kind 5 delete another kind 5 (undoing a
// deletion), and its check for deleted events filters on "#e"/"#a", which
// the store never indexes.

// deleteRequested deletes what an accepted deletion request names: events
// by id, and replaceable or addressable events by address up to the
// request's created_at; only the requester's own, and never another
// deletion request.
func (r *Relay) deleteRequested(ctx context.Context, del *nostr.Event) {
	for _, tag := range del.Tags {
		if len(tag) < 2 {
			continue
		}
		var f nostr.Filter
		var match func(*nostr.Event) bool
		switch tag[0] {
		case "e":
			f = nostr.Filter{IDs: []string{tag[1]}}
			match = func(*nostr.Event) bool { return true }
		case "a":
			kind, author, d, ok := parseAddress(tag[1])
			if !ok || author != del.PubKey {
				continue
			}
			until := del.CreatedAt
			f = nostr.Filter{Kinds: []int{kind}, Authors: []string{author}, Until: &until}
			// A replaceable event's address has an empty d; an addressable
			// event without a d tag is the address d="".
			match = func(ev *nostr.Event) bool { return ev.Tags.GetD() == d }
		default:
			continue
		}
		var targets []*nostr.Event
		err := r.events.Query(ctx, f, nil, func(m Meta, raw []byte) bool {
			if m.PubKeyHex() != del.PubKey || m.Kind == nostr.KindDeletion {
				return true
			}
			ev := &nostr.Event{}
			if easyjson.Unmarshal(raw, ev) == nil && match(ev) {
				targets = append(targets, ev)
			}
			return true
		})
		if err != nil {
			r.log.Warn("NIP-09: finding what a deletion names", "deletion", del.ID, "err", err)
			continue
		}
		for _, ev := range targets {
			if _, err := r.store.Events.Delete(ctx, ev.ID); err != nil {
				r.log.Warn("NIP-09: deleting", "event", ev.ID, "deletion", del.ID, "err", err)
			}
		}
	}
}

// parseAddress splits "<kind>:<pubkey>:<d>" of a replaceable or addressable kind.
func parseAddress(a string) (kind int, pubkey, d string, ok bool) {
	parts := strings.SplitN(a, ":", 3)
	if len(parts) != 3 {
		return 0, "", "", false
	}
	kind, err := strconv.Atoi(parts[0])
	if err != nil || !(nostr.IsReplaceableKind(kind) || nostr.IsAddressableKind(kind)) {
		return 0, "", "", false
	}
	if nostr.IsReplaceableKind(kind) && parts[2] != "" {
		return 0, "", "", false
	}
	return kind, parts[1], parts[2], true
}

// deleted reports whether a stored deletion request of ev's author names it:
// by id, or by address up to the request's time; a kind 5 never deletes a
// kind 5. By id it is one point lookup in the store's tombstones, for every
// event; by address a query, but only for replaceable and addressable kinds,
// few next to the notes and reactions that make up most of what a relay
// takes in.
func (r *Relay) deleted(ctx context.Context, ev *nostr.Event) (bool, error) {
	if ev.Kind == nostr.KindDeletion {
		return false, nil
	}
	if deleted, err := r.events.Deleted(ctx, ev.ID, ev.PubKey); deleted || err != nil {
		return deleted, err
	}
	if !nostr.IsReplaceableKind(ev.Kind) && !nostr.IsAddressableKind(ev.Kind) {
		return false, nil
	}
	addr := fmt.Sprintf("%d:%s:%s", ev.Kind, ev.PubKey, ev.Tags.GetD())
	since := ev.CreatedAt
	f := nostr.Filter{Kinds: []int{nostr.KindDeletion}, Authors: []string{ev.PubKey}, Tags: nostr.TagMap{"a": {addr}}, Since: &since, Limit: 1}
	found := false
	err := r.events.Query(ctx, f, nil, func(Meta, []byte) bool {
		found = true
		return false
	})
	return found, err
}

// deletedSince undoes the storing of ev when a deletion request naming it
// was committed after check looked for one, before ev's own transaction
// (the writer counts the transactions that store deletion requests): the
// request's own deleteRequested may have run before ev was stored, and so
// missed it. ev is then refused as check would have refused it; the same
// batch is the writer's business (pendingDeletions).
func (r *Relay) deletedSince(ctx context.Context, ev *nostr.Event) error {
	deleted, err := r.deleted(ctx, ev)
	if err != nil || !deleted {
		return err
	}
	if _, err := r.store.Events.Delete(ctx, ev.ID); err != nil {
		return err
	}
	return errors.New(refusedDeleted)
}
