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
// a second of a change or of a temporary ban lapsing while the list is
// quiet, and paced while a wave of bans comes (see maxParts), in pages
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
//
// A list followed from another outpost (Mirror) is that outpost's to
// publish: this one publishes none of it, and empties once the pages it
// published before it followed.
type BanList struct {
	List      *policies.BanList
	Events    *events.Store // where earlier publications are read at start
	Sink      Sink
	SecretKey string
	Log       *slog.Logger
	Now       func() time.Time
	Every     time.Duration // how often the list is looked at; default 200ms
	// Rest is how many times as long as a round took the publisher waits
	// after one that did work before the next; 0: restFactor, -1: none
	// (tests that wait for a whole list on a slow machine).
	Rest int
	// Offer takes each current event published before the start, for the
	// publish relays that lack it (Outbox.Offer); nil: there are none.
	Offer func(*nostr.Event)
	// Mirror: List is another outpost's, followed. Signing it again under
	// this key would add nothing a reader lacks (the primary's pages are
	// the list) but a copy of every page on every relay and, in this
	// process, the store's writes of them: at a million bans 4,352 pages,
	// which took a follower from about 220 MiB to 280–390 MiB.
	Mirror bool
}

// muteListD is the address of the kind-10000 mute list among the pages.
const muteListD = ""

// How a publisher shares the machine with the relay. The pages are
// rebuilt by part, a part being the bans of one first byte of key (BansIn),
// and only the parts changed since they were last published (Changed), at
// most maxParts of them a round, in turn; and after a round that did work
// it rests restFactor times as long as the round took before the next. A
// spam wave bans keys of every part every second: every round then has
// maxParts parts to rebuild, and the publisher takes at most a fifth of
// the time, the rest of the wave's pages following in later rounds,
// where it rebuilt and re-signed the whole list every 200 ms (most of the
// relay's CPU while 100,000 bans came in a minute, and 250 MB of garbage a
// round at a million bans). A lone change is published in the next round.
//
// A full round (maxParts parts, more waiting) of parts published before
// is a wave's, and rests waveRest times as long: each page republished is
// a write of its event, of its tags' index entries and of the old
// version's removal, and those writes, not the rebuilding, were most of
// what a wave cost the relay (its store's compactions and memtable
// flushes, and the collector near the memory limit). At a fifth of the
// time, 100,000 bans in a minute took 26 s of the relay's CPU and 1,022
// collections; with a wave's rounds at a thirteenth, 13 s and 96
// (BENCHMARKS.md §14). A
// wave's pages are published later, every part in turn; a list's first
// publication and a lone change keep restFactor.
const (
	maxParts   = 16
	restFactor = 4
	waveRest   = 12
	retryAfter = 5 * time.Second // a part whose page failed (e.g. a full disk) is tried again after this
)

// restAfter is how many times as long as a round took to rest after it:
// rest (BanList.Rest) when set, else restFactor, or waveRest after a
// wave's round.
func restAfter(rest int, wave bool) int {
	switch {
	case rest != 0:
		return rest
	case wave:
		return waveRest
	}
	return restFactor
}

// pubState is what a publisher knows of what it published.
type pubState struct {
	last    map[string][32]byte // digest of each page's tags, by d
	seen    [256]uint64         // each part's change count as published (BanList.Changed)
	lapse   [256]int64          // when a ban listed in each part lapses next (0: none)
	held    [256]int64          // a part that failed is not tried again before this
	done    [256]bool           // the part was published (or found unchanged) once
	words   []string            // the blocked words as published
	wordsOK bool                // they were
	next    int                 // the part the next round looks at first
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
	last, err := b.earlier(ctx, sg)
	if err != nil {
		log.Error("publish: reading earlier ban list events", "err", err)
		return
	}
	st := &pubState{last: last}
	every := cmp.Or(b.Every, 200*time.Millisecond)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := now()
		start := time.Now()
		worked, wave := b.round(ctx, sg, st, at)
		wait := every
		if rest := restAfter(b.Rest, wave); worked && rest > 0 {
			wait = max(every, time.Duration(rest)*time.Since(start))
		}
		t.Reset(wait)
	}
}

// round publishes what changed of the words and of up to maxParts parts of
// the bans; it reports whether there was anything to look at, and whether
// it was a wave's: maxParts parts, each published before.
func (b *BanList) round(ctx context.Context, sg *signer, st *pubState, at time.Time) (worked, wave bool) {
	var counts [256]uint64
	b.List.Changed(&counts)
	unix := at.Unix()
	var parts []int
	for i := range 256 {
		p := (st.next + i) % 256
		due := !st.done[p] || counts[p] != st.seen[p] || (st.lapse[p] != 0 && unix >= st.lapse[p])
		if due && unix >= st.held[p] {
			if parts = append(parts, p); len(parts) == maxParts {
				break
			}
		}
	}
	if len(parts) > 0 {
		st.next = (parts[len(parts)-1] + 1) % 256
	}
	words := b.List.Words()
	wordsDue := !st.wordsOK || !slices.Equal(words, st.words)
	if len(parts) == 0 && !wordsDue {
		return false, false
	}
	wave = len(parts) == maxParts
	for _, p := range parts {
		wave = wave && st.done[p]
	}
	// The pages published before under each part looked at (to empty the
	// ones it no longer has) and under the words.
	before := map[int][]string{}
	for d := range st.last {
		before[partOf(d)] = append(before[partOf(d)], d)
	}
	for _, p := range parts {
		want, lapse := map[string]nostr.Tags{}, int64(0)
		if !b.Mirror {
			var bans []policies.Ban
			bans, lapse = b.List.BansIn(byte(p), unix)
			want = BanPages(bans)
		}
		if b.publish(ctx, sg, st, want, before[p], at) {
			st.seen[p], st.lapse[p], st.done[p] = counts[p], lapse, true
		} else {
			st.held[p] = unix + int64(retryAfter/time.Second)
		}
	}
	if wordsDue && b.publish(ctx, sg, st, b.wordPages(words), before[wordsPart], at) {
		st.words, st.wordsOK = words, true
	}
	return true, wave
}

// wordPages are the pages of words to publish: none of a Mirror's.
func (b *BanList) wordPages(words []string) map[string]nostr.Tags {
	if b.Mirror {
		return map[string]nostr.Tags{}
	}
	return WordPages(words)
}

// wordsPart is partOf the word pages and of the mute list.
const wordsPart = -1

// partOf is the part of the bans a page d belongs to (the first byte of
// its keys), or wordsPart.
func partOf(d string) int {
	if prefix, ok := strings.CutPrefix(d, banPagePrefix); ok && len(prefix) >= 2 {
		if v, err := strconv.ParseUint(prefix[:2], 16, 8); err == nil {
			return int(v)
		}
	}
	return wordsPart
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

// publish signs and sinks each page of want whose tags changed, and the
// pages of was (published before in the same part) that want no longer
// has, empty; it reports whether all went.
func (b *BanList) publish(ctx context.Context, sg *signer, st *pubState, want map[string]nostr.Tags, was []string, at time.Time) (ok bool) {
	for _, d := range was {
		if _, ok := want[d]; !ok {
			want[d] = emptyPage(d)
		}
	}
	ok = true
	for _, d := range slices.Sorted(maps.Keys(want)) {
		sum := digest(want[d])
		if was, ok := st.last[d]; ok && was == sum {
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
			ok = false
			continue
		}
		st.last[d] = sum
	}
	return ok
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
