package publish

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/policies"
)

// BanList publishes a ban list as signed NIP-51 sets (kind 30000), within
// a second of every change and of every temporary ban lapsing, in pages
// that every relay takes (see pageSet.pages):
//
//   - the banned keys, d = "outpost-bans-<2 or more hex digits of the
//     key>", each key a tag ["p", <hex>, "", <reason>, <expires_at unix,
//     for a temporary ban>];
//   - the blocked words, d = "outpost-words-<0 or more hex digits of the
//     SHA-256 of the word>", each word a tag ["word", <word in its
//     matching form>].
//
// Only pages whose tags changed are signed and sent; a page that empties
// is republished empty. What was published before is read from the store
// at start, so a restart republishes nothing unchanged. The kind-10000 mute
// list of earlier versions (every word in one event, which relays refuse
// past about 2,000 words) is republished empty once.
type BanList struct {
	List      *policies.BanList
	Events    *events.Store // where earlier publications are read at start
	Sink      Sink
	SecretKey string
	Log       *slog.Logger
	Now       func() time.Time
	Every     time.Duration // how often the list is looked at; default 200ms
	// Offer takes each current event published before the start, for the
	// publish relays that lack it (Outbox.Offer); nil: there are none.
	Offer func(*nostr.Event)
}

// muteListD is the address of the kind-10000 mute list among the pages.
const muteListD = ""

// Run publishes until ctx ends.
func (b *BanList) Run(ctx context.Context) {
	now := clock(b.Now)
	log := cmp.Or(b.Log, slog.Default())
	sg, err := newSigner(b.SecretKey)
	if err != nil {
		log.Error("publish: ban list", "err", err)
		return
	}
	last, err := b.earlier(ctx, sg)
	if err != nil {
		log.Error("publish: reading earlier ban list events", "err", err)
		return
	}
	t := time.NewTicker(cmp.Or(b.Every, 200*time.Millisecond))
	defer t.Stop()
	version, lapse, retry, first := uint64(0), int64(0), int64(0), true
	var heldSince time.Time
	for {
		at := now()
		if v := b.List.Version(); (first || v != version || (lapse != 0 && at.Unix() >= lapse) || (retry != 0 && at.Unix() >= retry)) &&
			!b.putOff(at, &heldSince) {
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

// resyncWait is how long a publication waits for a whole list being taken
// to be all in (see putOff).
const resyncWait = time.Minute

// putOff says whether to wait with a publication: while a whole list is
// taken page by page (a follower's first sync of a primary's, or another
// primary's), each page changes the list, and publishing it would copy
// the whole list and make its pages again a page at a time. Its pages are
// published once it is all in; one that never ends (its fetch failed
// part-way) is published once every resyncWait meanwhile.
func (b *BanList) putOff(at time.Time, heldSince *time.Time) bool {
	if !b.List.Resyncing() {
		*heldSince = time.Time{}
		return false
	}
	if heldSince.IsZero() || at.Sub(*heldSince) >= resyncWait {
		first := heldSince.IsZero()
		*heldSince = at
		return first
	}
	return true
}

// earlier is what was published before, by d: a digest of each page's
// tags (32 bytes a page, where the tags would hold the whole list). Each
// of those events goes to Offer, before any newer version is signed.
func (b *BanList) earlier(ctx context.Context, sg *signer) (map[string][32]byte, error) {
	last := map[string][32]byte{}
	found := func(d string, ev *nostr.Event) {
		if isListEvent(ev.Kind, d) {
			last[d] = digest(ev.Tags)
			if b.Offer != nil {
				b.Offer(ev)
			}
		}
	}
	err := sg.load(ctx, b.Events, KindBanPage, found)
	if err == nil {
		err = sg.load(ctx, b.Events, KindMuteList, found)
	}
	return last, err
}

// publish signs and sinks every page whose tags changed; it returns when
// the next listed ban lapses (0: none does), and whether a page failed.
func (b *BanList) publish(ctx context.Context, sg *signer, last map[string][32]byte, at time.Time) (next int64, failed bool) {
	bans, next := b.List.Bans(at.Unix())
	want := BanPages(bans)
	maps.Copy(want, WordPages(b.List.Words()))
	for d := range last {
		if _, ok := want[d]; !ok {
			want[d] = emptyPage(d)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(want)) {
		sum := digest(want[d])
		if was, ok := last[d]; ok && was == sum {
			continue
		}
		kind := KindBanPage
		if d == muteListD {
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
		last[d] = sum
	}
	return next, failed
}

// digest sums tags, each element length-prefixed so no two lists share one.
func digest(tags nostr.Tags) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, tag := range tags {
		h.Write(binary.BigEndian.AppendUint64(n[:0], uint64(len(tag))))
		for _, v := range tag {
			h.Write(binary.BigEndian.AppendUint64(n[:0], uint64(len(v))))
			h.Write([]byte(v))
		}
	}
	return [32]byte(h.Sum(nil))
}

// Limits of one page, under what relays take by default (strfry: 65,536
// bytes an event; many relays: 1,000 tags or fewer).
const (
	maxPageTags  = 1000
	maxPageBytes = 55_000 // of the listed tags: the rest of the event fits in the 60 KB a page may take
)

// pageSet is one kind of page: its d prefix, its title, and how many hex
// digits its shortest prefix has.
type pageSet struct {
	prefix, title string
	depth         int
}

var (
	banPages  = pageSet{prefix: banPagePrefix, title: "Banned public keys", depth: 2}
	wordPages = pageSet{prefix: wordPagePrefix, title: "Blocked words", depth: 0}
)

// entry is one listed tag and the 64 hex digits it is paged by.
type entry struct {
	key string
	tag nostr.Tag
}

// BanPages sorts bans (sorted by key, as BanList.Bans gives them) into
// their kind-30000 pages, by d tag (see pageSet.pages).
func BanPages(bans []policies.Ban) map[string]nostr.Tags {
	entries := make([]entry, len(bans))
	for i, ban := range bans {
		p := nostr.Tag{"p", ban.PubKey, "", ban.Reason}
		if ban.ExpiresAt != 0 {
			p = append(p, strconv.FormatInt(ban.ExpiresAt, 10))
		}
		entries[i] = entry{ban.PubKey, p}
	}
	return banPages.pages(entries)
}

// WordPages sorts blocked words, in their matching form, into their
// kind-30000 pages, paged by the hex of each one's SHA-256 (see
// pageSet.pages).
func WordPages(words []string) map[string]nostr.Tags {
	seen := map[string]bool{}
	var entries []entry
	for _, w := range words {
		if n := policies.NormalizeText(w); n != "" && !seen[n] {
			seen[n] = true
			sum := sha256.Sum256([]byte(n))
			entries = append(entries, entry{hex.EncodeToString(sum[:]), nostr.Tag{"word", n}})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	return wordPages.pages(entries)
}

// pages sorts entries (sorted by key) into pages, by d tag: the set's
// prefix and a prefix of the keys: depth hex digits, and one more for
// every time the page would outgrow maxPageTags or maxPageBytes: a full
// page is split into the 16 pages of its prefix and one more digit, so
// the pages deepen where the list grows. The prefixes of the pages are
// never one another's but for the empty pages of the prefixes split: a
// reader starts from the pages of depth digits, takes the tags of each
// page that has some and looks one digit deeper under each that is empty
// (ReadList); the union of the tags is the list. A page that a split or a
// removal emptied is published empty.
func (ps pageSet) pages(entries []entry) map[string]nostr.Tags {
	out := map[string]nostr.Tags{}
	for lo := 0; lo < len(entries); {
		hi := runOf(entries, lo, ps.depth)
		ps.addPages(out, entries[lo].key[:ps.depth], entries[lo:hi])
		lo = hi
	}
	return out
}

// runOf is where the run of entries from lo that share lo's first n digits ends.
func runOf(entries []entry, lo, n int) int {
	hi := lo + 1
	for hi < len(entries) && entries[hi].key[:n] == entries[lo].key[:n] {
		hi++
	}
	return hi
}

// addPages adds the page of prefix, or if its entries do not fit one, the
// pages one digit deeper, and prefix's page empty: a reader looks deeper
// under an empty page, and only there (see ReadList).
func (ps pageSet) addPages(out map[string]nostr.Tags, prefix string, entries []entry) {
	if fits(entries) || len(prefix) == 64 {
		out[ps.prefix+prefix] = ps.page(prefix, entries)
		return
	}
	out[ps.prefix+prefix] = ps.page(prefix, nil)
	for lo := 0; lo < len(entries); {
		hi := runOf(entries, lo, len(prefix)+1)
		ps.addPages(out, entries[lo].key[:len(prefix)+1], entries[lo:hi])
		lo = hi
	}
}

// fits reports whether entries fit one page, counting each tag's JSON at
// its longest: an escaped character as 6 bytes, a byte of UTF-8 as 2.
func fits(entries []entry) bool {
	if len(entries)+2 > maxPageTags {
		return false
	}
	size := 0
	for _, e := range entries {
		size += len(`[],`)
		for _, v := range e.tag {
			size += len(`"",`) + jsonLen(v)
		}
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

func (ps pageSet) page(prefix string, entries []entry) nostr.Tags {
	title := ps.title
	if prefix != "" {
		title += ", page " + prefix
	}
	tags := make(nostr.Tags, 0, len(entries)+2)
	tags = append(tags, nostr.Tag{"d", ps.prefix + prefix}, nostr.Tag{"title", title})
	for _, e := range entries {
		tags = append(tags, e.tag)
	}
	return tags
}

// emptyPage is what page d holds once nothing is listed there.
func emptyPage(d string) nostr.Tags {
	for _, ps := range []pageSet{banPages, wordPages} {
		if prefix, ok := strings.CutPrefix(d, ps.prefix); ok {
			return ps.page(prefix, nil)
		}
	}
	return nostr.Tags{} // the mute list of earlier versions
}
