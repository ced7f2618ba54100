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
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/policies"
)

// BanList publishes a ban list as signed NIP-51 lists, within a second of
// every change and of every temporary ban lapsing:
//
//   - the banned keys as kind-30000 sets, one page per prefix of the key
//     (d = "outpost-bans-<2 or more hex digits>", see BanPages; a change
//     republishes only the pages whose tags changed), each key a tag
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

// Limits of one page, under what relays take by default (strfry: 65,536
// bytes an event; many relays: 1,000 tags or fewer).
const (
	maxPageTags  = 1000
	maxPageBytes = 55_000 // of p tags: the rest of the event fits in the 60 KB a page may take
)

// BanPages sorts bans (sorted by key, as BanList.Bans gives them) into
// their kind-30000 pages, by d tag: "outpost-bans-<prefix>", where prefix
// is the first two hex digits of the keys it holds, and one more digit for
// every time the page would outgrow maxPageTags or maxPageBytes: a full
// page is split into the 16 pages of its prefix and one more digit, so the
// pages deepen where the list grows. The prefixes of the pages are never
// one another's: a reader takes every current kind-30000 page of the
// service key whose d starts "outpost-bans-", and the union of their p tags
// is the list (a page a split or a lift emptied is published empty).
func BanPages(bans []policies.Ban) map[string]nostr.Tags {
	out := map[string]nostr.Tags{}
	for lo := 0; lo < len(bans); {
		hi := runOf(bans, lo, 2)
		addPages(out, bans[lo].PubKey[:2], bans[lo:hi])
		lo = hi
	}
	return out
}

// runOf is where the run of bans from lo that share lo's first n digits ends.
func runOf(bans []policies.Ban, lo, n int) int {
	hi := lo + 1
	for hi < len(bans) && bans[hi].PubKey[:n] == bans[lo].PubKey[:n] {
		hi++
	}
	return hi
}

// addPages adds the page of prefix, or if its bans do not fit one, the
// pages one digit deeper.
func addPages(out map[string]nostr.Tags, prefix string, bans []policies.Ban) {
	if fits(bans) || len(prefix) == 64 {
		out[banPagePrefix+prefix] = banPageTags(banPagePrefix+prefix, bans)
		return
	}
	for lo := 0; lo < len(bans); {
		hi := runOf(bans, lo, len(prefix)+1)
		addPages(out, bans[lo].PubKey[:len(prefix)+1], bans[lo:hi])
		lo = hi
	}
}

// fits reports whether bans fit one page, counting each tag's JSON at its
// longest: an escaped character as 6 bytes, a byte of UTF-8 as 2.
func fits(bans []policies.Ban) bool {
	if len(bans)+2 > maxPageTags {
		return false
	}
	size := 0
	for _, b := range bans {
		size += len(`["p","","",""],`) + len(b.PubKey) + len(`,"9999999999"`) + jsonLen(b.Reason)
	}
	return size <= maxPageBytes
}

func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			n += 6
		case c >= 0x80:
			n += 2
		default:
			n++
		}
	}
	return n
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
