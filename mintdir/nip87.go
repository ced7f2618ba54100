package mintdir

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// RejectInvalidNIP87 is a khatru RejectEvent policy for the events the
// directory reads: mint reviews (kind 38000 with k=38172) and Cashu mint
// announcements (kind 38172). Other events pass.
func RejectInvalidNIP87(_ context.Context, ev *nostr.Event) (reject bool, msg string) {
	switch {
	case ev.Kind == KindCashuAnnouncement:
		if ev.Tags.GetD() == "" {
			return true, "invalid: a mint announcement (kind 38172) needs a d tag with the mint's pubkey"
		}
		n := 0
		for t := range ev.Tags.FindAll("u") {
			if _, err := catalogueURL(t[1]); err != nil {
				return true, "invalid: a mint announcement's u tag must be the mint's http(s) URL, got " + outpost.Echo(t[1])
			}
			n++
		}
		if n == 0 {
			return true, "invalid: a mint announcement (kind 38172) needs a u tag with the mint's URL"
		}
	case isMintReview(ev):
		ratings := 0
		for t := range ev.Tags.FindAll("rating") {
			if _, ok := parseRating(t[1]); !ok {
				return true, "invalid: the rating tag must be an integer from 1 to 5, got " + outpost.Echo(t[1])
			}
			ratings++
		}
		if ratings > 1 {
			return true, "invalid: a mint review has at most one rating tag"
		}
		urls := 0
		for t := range ev.Tags.FindAll("u") {
			if _, err := catalogueURL(t[1]); err != nil {
				return true, "invalid: a mint review's u tag must be the mint's http(s) URL, got " + outpost.Echo(t[1])
			}
			urls++
		}
		if urls == 0 && !validMintPubkey(ev.Tags.GetD()) {
			return true, "invalid: a mint review (kind 38000, k=38172) needs a u tag with the mint's URL or the mint's pubkey as its d tag"
		}
	}
	return false, ""
}

// OnEventSaved is a khatru OnEventSaved hook: a saved review refreshes the
// reviewed mint's summary, a mint announcement adds its URLs to the
// catalogue, and a followed monitor's status event is a vantage. The work
// is queued: the relay must not wait for it.
func (d *Directory) OnEventSaved(_ context.Context, ev *nostr.Event) {
	switch {
	case isMintReview(ev):
		d.reviewsSeen.Add(1)
		ev := *ev
		d.enqueue(func(ctx context.Context) { d.takeReview(ctx, &ev) })
	case ev.Kind == KindCashuAnnouncement:
		ev := *ev
		d.enqueue(func(ctx context.Context) { d.takeAnnouncement(ctx, &ev) })
	case ev.Kind == KindMintStatus && d.follows(ev.PubKey):
		d.takeStatusEvent(ev)
	}
}

// takeReview remembers how the review spelled the mint's URLs and refreshes
// the summaries of the mints it reviews.
func (d *Directory) takeReview(ctx context.Context, ev *nostr.Event) {
	ids := map[ID]bool{}
	err := d.db.Update(func(txn *kv.Txn) error {
		clear(ids)
		for t := range ev.Tags.FindAll("u") {
			u, err := catalogueURL(t[1])
			if err != nil {
				continue
			}
			if t[1] != u && t[1] != u+"/" {
				if err := txn.Set(append(append(key(kReviewURL, []byte(u)), 0), t[1]...), nil); err != nil {
					return err
				}
			}
			if id, ok, err := lookupID(txn, urlKey(u)); err != nil {
				return err
			} else if ok {
				ids[id] = true
			}
		}
		if d := ev.Tags.GetD(); d != "" {
			if id, ok, err := lookupID(txn, pubKeyKey(d)); err != nil {
				return err
			} else if ok {
				ids[id] = true
			}
		}
		return nil
	})
	if err != nil {
		d.log.Error("mintdir: take review", "event", ev.ID, "err", err)
		return
	}
	for id := range ids {
		if err := d.refreshSummary(ctx, id, true); err != nil && err != ErrNotFound {
			d.log.Error("mintdir: refresh after a review", "mint_id", id.String(), "err", err)
		}
	}
}

// Announcements are open to anyone who can publish to the relay; these keep
// one author from filling the catalogue.
const (
	announcedURLsPerEvent = 5
	announcedMintsPerHour = 20 // new mints per author
)

// takeAnnouncement adds the announced URLs (clearnet ones that pass the SSRF
// guard) as mints; the prober then learns whether they are the mint they
// claim to be, and merges URLs that share a pubkey.
func (d *Directory) takeAnnouncement(ctx context.Context, ev *nostr.Event) {
	n := 0
	for t := range ev.Tags.FindAll("u") {
		if n++; n > announcedURLsPerEvent {
			return
		}
		u, err := d.checkURL(ctx, t[1])
		if err != nil {
			d.log.Debug("mintdir: announced URL refused", "event", ev.ID, "url", t[1], "err", err)
			continue
		}
		if known, _ := d.GetByURL(ctx, u); known == nil {
			if ok, _ := d.announcers.Allow(ev.PubKey); !ok {
				d.log.Info("mintdir: announcer over its hourly limit", "pubkey", ev.PubKey, "url", u)
				return
			}
		}
		if _, err := d.add(u, "announcement", ev.PubKey); err != nil {
			d.log.Error("mintdir: add announced mint", "url", u, "err", err)
		}
	}
}
