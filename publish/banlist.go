package publish

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/events"
	"github.com/outpost-relay/outpost/policies"
)

// BanList publishes a ban list as signed NIP-51 lists, within a second of
// every change and of every temporary ban lapsing:
//
//   - the banned keys as kind-30000 sets, one page per first byte of the
//     key (d = "outpost-bans-<2 hex digits>", so a change republishes one
//     page of about n/256 keys), each key a tag
//     ["p", <hex>, "", <reason>, <expires_at unix, for a temporary ban>];
//     a page that empties is republished empty;
//   - the blocked words as the service's kind-10000 mute list, one
//     ["word", <word in its matching form>] tag each.
type BanList struct {
	List      *policies.BanList
	Events    *events.Store // where earlier publications are read at start
	Sink      Sink
	SecretKey string
	Log       *slog.Logger
	Now       func() time.Time
	Every     time.Duration // how often the list is looked at; default 200ms
}

// Run publishes until ctx ends.
func (b *BanList) Run(ctx context.Context) {
	now := clock(b.Now)
	log := cmp.Or(b.Log, slog.Default())
	sg, err := newSigner(b.SecretKey)
	if err != nil {
		log.Error("publish: ban list", "err", err)
		return
	}
	pages, err := sg.published(ctx, b.Events, KindBanPage)
	if err != nil {
		log.Error("publish: reading earlier ban list events", "err", err)
		return
	}
	words, err := sg.published(ctx, b.Events, KindMuteList)
	if err != nil {
		log.Error("publish: reading earlier ban list events", "err", err)
		return
	}
	last := map[string]nostr.Tags{}
	for d, ev := range pages {
		last[d] = ev.Tags
	}
	if ev := words[""]; ev != nil {
		last[""] = ev.Tags
	}
	t := time.NewTicker(cmp.Or(b.Every, 200*time.Millisecond))
	defer t.Stop()
	version, lapse, retry, first := uint64(0), int64(0), int64(0), true
	for {
		at := now()
		if v := b.List.Version(); first || v != version || (lapse != 0 && at.Unix() >= lapse) || (retry != 0 && at.Unix() >= retry) {
			first, version, retry = false, v, 0
			var failed bool
			lapse, failed = b.publish(ctx, sg, last, at)
			if failed { // e.g. a full disk: the list must not stay stale once it passes
				retry = at.Unix() + 5
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publish signs and sinks every page whose tags changed; it returns when
// the next listed ban lapses (0: none does), and whether a page failed.
func (b *BanList) publish(ctx context.Context, sg *signer, last map[string]nostr.Tags, at time.Time) (next int64, failed bool) {
	bans, next := b.List.Bans(at.Unix())
	want := BanPages(bans)
	for d := range last {
		if _, ok := want[d]; !ok && d != "" {
			want[d] = banPageTags(d, nil)
		}
	}
	want[""] = wordTags(b.List.Words())
	for _, d := range slices.Sorted(maps.Keys(want)) {
		if tags, ok := last[d]; ok && sameTags(tags, want[d]) {
			continue
		}
		kind := KindBanPage
		if d == "" {
			kind = KindMuteList
		}
		ev, err := sg.sign(kind, d, want[d], "", nostr.Timestamp(at.Unix()))
		if err == nil {
			err = b.Sink(ctx, ev)
		}
		if err != nil {
			if ctx.Err() == nil {
				logFailure(cmp.Or(b.Log, slog.Default()), "publish: ban list event", err, "d", d)
			}
			failed = true
			continue
		}
		last[d] = want[d]
	}
	return next, failed
}

// BanPages sorts bans into their kind-30000 pages, by d tag.
func BanPages(bans []policies.Ban) map[string]nostr.Tags {
	byPage := map[string][]policies.Ban{}
	for _, ban := range bans {
		d := banPagePrefix + ban.PubKey[:2]
		byPage[d] = append(byPage[d], ban)
	}
	out := make(map[string]nostr.Tags, len(byPage))
	for d, page := range byPage {
		out[d] = banPageTags(d, page)
	}
	return out
}

func banPageTags(d string, bans []policies.Ban) nostr.Tags {
	tags := make(nostr.Tags, 0, len(bans)+2)
	tags = append(tags, nostr.Tag{"d", d}, nostr.Tag{"title", "Banned public keys, page " + d[len(banPagePrefix):]})
	for _, ban := range bans {
		p := nostr.Tag{"p", ban.PubKey, "", ban.Reason}
		if ban.ExpiresAt != 0 {
			p = append(p, strconv.FormatInt(ban.ExpiresAt, 10))
		}
		tags = append(tags, p)
	}
	return tags
}

func wordTags(words []string) nostr.Tags {
	tags := nostr.Tags{}
	seen := map[string]bool{}
	for _, w := range words {
		n := policies.NormalizeText(w)
		if n != "" && !seen[n] {
			seen[n] = true
			tags = append(tags, nostr.Tag{"word", n})
		}
	}
	slices.SortFunc(tags, func(a, b nostr.Tag) int { return cmp.Compare(a[1], b[1]) })
	return tags
}
