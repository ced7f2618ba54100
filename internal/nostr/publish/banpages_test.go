package publish

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
)

// TestBanPagesFitRelays: however the keys fall (here 30,000 random ones,
// and 5,000 sharing their first byte, some with the longest reasons),
// every page stays under 1,000 tags and 60 KB signed, the pages' prefixes
// are never one another's, and their union is the list. (Before, a page
// held every key of one first byte: 4,123 tags and 363 KB at a million
// bans, which strfry refuses.)
func TestBanPagesFitRelays(t *testing.T) {
	t.Parallel()
	var bans []policies.Ban
	for i := range 30_000 {
		bans = append(bans, policies.Ban{PubKey: randomKey(""), Reason: "spam"})
		if i < 5000 {
			b := policies.Ban{PubKey: randomKey("00"), Reason: "flood", ExpiresAt: 1_900_000_000}
			if i%10 == 0 {
				b.Reason = strings.Repeat("é\"<", 66) // 200 characters, escaped at length
			}
			bans = append(bans, b)
		}
	}
	slices.SortFunc(bans, func(a, b policies.Ban) int { return strings.Compare(a.PubKey, b.PubKey) })
	pages := BanPages(bans)
	sk := nostr.GeneratePrivateKey()
	var union []string
	var prefixes []string
	for d, tags := range pages {
		ev := nostr.Event{Kind: KindBanPage, Tags: tags, CreatedAt: nostr.Now()}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(ev)
		if len(tags) > 1000 || len(raw) > 60_000 {
			t.Errorf("page %s: %d tags, %d bytes", d, len(tags), len(raw))
		}
		prefix := strings.TrimPrefix(d, banPagePrefix)
		if len(tags) > 2 { // an empty page is a split one's: readers look deeper there
			prefixes = append(prefixes, prefix)
		}
		for _, tag := range tags {
			if tag[0] == "p" {
				if !strings.HasPrefix(tag[1], prefix) {
					t.Fatalf("page %s holds %s", d, tag[1])
				}
				union = append(union, tag[1])
			}
		}
	}
	slices.Sort(prefixes)
	for i := 1; i < len(prefixes); i++ {
		if strings.HasPrefix(prefixes[i], prefixes[i-1]) {
			t.Errorf("page %s lies inside page %s", prefixes[i], prefixes[i-1])
		}
	}
	slices.Sort(union)
	want := make([]string, len(bans))
	for i, b := range bans {
		want[i] = b.PubKey
	}
	if !slices.Equal(union, want) {
		t.Errorf("the pages hold %d keys, the list %d", len(union), len(want))
	}
	t.Logf("%d bans in %d pages", len(bans), len(pages))
}

func randomKey(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])[len(prefix):]
}

// TestWordPagesFitRelays: 5,000 blocked words (the mute list of one event
// that strfry refused with "too many tags: 5000"), some long, are split
// into pages under 1,000 tags and 60 KB, by prefixes of their SHA-256, and
// the pages together hold every word once.
func TestWordPagesFitRelays(t *testing.T) {
	t.Parallel()
	var words []string
	for i := range 5000 {
		w := fmt.Sprint("word", i)
		if i%50 == 0 {
			w += strings.Repeat(" é\"", 60)
		}
		words = append(words, w, strings.ToUpper(w)) // the same word twice: once in the pages
	}
	pages := WordPages(words)
	var union []string
	for d, tags := range pages {
		checkPage(t, d, tags)
		prefix := strings.TrimPrefix(d, wordPagePrefix)
		for _, tag := range tags[2:] {
			if sum := sha256.Sum256([]byte(tag[1])); tag[0] != "word" || !strings.HasPrefix(hex.EncodeToString(sum[:]), prefix) {
				t.Fatalf("page %s holds %v", d, tag)
			}
			union = append(union, tag[1])
		}
	}
	if len(union) != 5000 || len(slices.Compact(slices.Sorted(slices.Values(union)))) != 5000 {
		t.Fatalf("the pages hold %d words, want 5000 distinct", len(union))
	}
	if few := WordPages([]string{"spam", "scam"}); len(few) != 1 || len(few[wordPagePrefix]) != 4 {
		t.Fatalf("two words: %v", few)
	}
	t.Logf("5000 words in %d pages", len(pages))
}

// checkPage fails unless page d, signed, stays under 1,000 tags and 60 KB.
func checkPage(t *testing.T, d string, tags nostr.Tags) {
	t.Helper()
	ev := nostr.Event{Kind: KindBanPage, Tags: tags, CreatedAt: nostr.Now()}
	if err := ev.Sign(nostr.GeneratePrivateKey()); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ev)
	if len(tags) > 1000 || len(raw) > 60_000 {
		t.Errorf("page %s: %d tags, %d bytes", d, len(tags), len(raw))
	}
}

// sinkLog records what a publisher sinks, and stores it as the relay would.
type sinkLog struct {
	st  *events.Store
	mu  sync.Mutex
	evs []*nostr.Event
}

func (s *sinkLog) sink(ctx context.Context, ev *nostr.Event) error {
	if _, err := s.st.Save(ctx, ev); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return nil
}

func (s *sinkLog) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.evs)
}

// Only the pages a change touches are republished: one ban, one word,
// one page each; and a restart on the same store republishes nothing.
func TestOnlyChangedPagesRepublished(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Options{})
	list := policies.NewBanList()
	var bans []policies.Ban
	for range 3000 {
		bans = append(bans, policies.Ban{PubKey: randomKey(""), Reason: "spam"})
	}
	list.SetBans(bans)
	var words []string
	for i := range 3000 {
		words = append(words, fmt.Sprint("word", i))
	}
	list.SetWords(words)
	sk := nostr.GeneratePrivateKey()
	run := func(s *sinkLog) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b := &BanList{List: list, Events: st.Events, Sink: s.sink, SecretKey: sk, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Every: 10 * time.Millisecond, Rest: -1}
		go func() { b.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	first := &sinkLog{st: st.Events}
	stop := run(first)
	sorted, _ := list.Bans(0)
	all := len(BanPages(sorted)) + len(WordPages(words))
	testkit.WaitFor(t, 30*time.Second, "every page published", func() bool { return first.count() == all })
	list.Ban(policies.Ban{PubKey: bans[0].PubKey[:2] + randomKey("")[2:], Reason: "new"})
	testkit.WaitFor(t, 10*time.Second, "the ban published", func() bool { return first.count() == all+1 })
	list.AddWords("brand new phrase")
	testkit.WaitFor(t, 10*time.Second, "the word published", func() bool { return first.count() == all+2 })
	stop()
	if n := first.count(); n != all+2 {
		t.Fatalf("%d events for %d pages, one ban and one word", n, all)
	}

	again := &sinkLog{st: st.Events}
	stop = run(again)
	list.AddWords("after the restart")
	testkit.WaitFor(t, 10*time.Second, "the word added after the restart published", func() bool { return again.count() > 0 })
	stop()
	if again.count() != 1 {
		t.Fatalf("a restart and one word republished %d pages", again.count())
	}
}

// TestRoundsArePaced: a round of the publisher rebuilds at most maxParts
// parts of the list (the bans of one first byte of key each) before it
// rests, so a wave of bans touching every part does not take the relay's
// CPU for the whole list at once (before, every round rebuilt and
// re-signed every changed page of the whole list). With a rest of an hour,
// the first round alone publishes the pages of the first maxParts parts.
func TestRoundsArePaced(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Options{})
	list := policies.NewBanList()
	var bans []policies.Ban
	for p := range 256 {
		for range 3 {
			bans = append(bans, policies.Ban{PubKey: randomKey(fmt.Sprintf("%02x", p)), Reason: "wave"})
		}
	}
	list.SetBans(bans)
	var first []policies.Ban
	for p := range maxParts {
		b, _ := list.BansIn(byte(p), 0)
		first = append(first, b...)
	}
	want := len(BanPages(first))
	// The sink stores whatever the context: a round cut short by the
	// test's end would not tell a paced round from one that was stopped.
	s := &sinkLog{st: st.Events}
	sink := func(_ context.Context, ev *nostr.Event) error { return s.sink(context.Background(), ev) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b := &BanList{List: list, Events: st.Events, Sink: sink, SecretKey: nostr.GeneratePrivateKey(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Every: time.Hour}
	go func() { b.Run(ctx); close(done) }()
	testkit.WaitFor(t, 30*time.Second, "the first round published", func() bool { return s.count() >= want })
	cancel()
	<-done
	if n := s.count(); n != want {
		t.Fatalf("the first round published %d pages, want the %d of its %d parts (of %d pages in all)", n, want, maxParts, len(BanPages(bans)))
	}
}

// TestWaveRoundsRestLonger: a full round (maxParts parts) of parts
// published before is a wave's and rests waveRest times its length; a
// list's first publication, a round with a part new to it, and a lone
// change keep restFactor.
func TestWaveRoundsRestLonger(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Options{})
	list := policies.NewBanList()
	ban := func(parts []int) {
		for _, p := range parts {
			list.Ban(policies.Ban{PubKey: randomKey(fmt.Sprintf("%02x", p)), Reason: "wave"})
		}
	}
	s := &sinkLog{st: st.Events}
	b := &BanList{List: list, Events: st.Events, Sink: s.sink, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	sg, err := newSigner(nostr.GeneratePrivateKey())
	if err != nil {
		t.Fatal(err)
	}
	ps := &pubState{last: map[string][32]byte{}}
	for p := maxParts; p < 256; p++ { // published, unchanged
		ps.done[p] = true
	}
	first := make([]int, maxParts) // parts 0 … maxParts-1
	for i := range first {
		first[i] = i
	}
	steps := []struct {
		name  string
		parts []int
		fresh int // a part taken for never published, or -1
		wave  bool
	}{
		{"the first publication", first, -1, false},
		{"the same parts changed again", first, -1, true},
		{"a part never published among them", first, 7, false},
		{"a lone change", []int{3}, -1, false},
	}
	at := time.Unix(1_800_000_000, 0)
	for _, step := range steps {
		if step.fresh >= 0 {
			ps.done[step.fresh] = false
		}
		ban(step.parts)
		worked, wave := b.round(context.Background(), sg, ps, at)
		if !worked || wave != step.wave {
			t.Errorf("%s: worked %v, wave %v; want a wave %v", step.name, worked, wave, step.wave)
		}
		at = at.Add(time.Second)
	}
	if restAfter(0, true) != waveRest || restAfter(0, false) != restFactor || restAfter(-1, true) != -1 {
		t.Error("restAfter: a wave's round rests waveRest times, others restFactor, a set Rest wins")
	}
}

// TestMirrorPublishesNoneOfTheList: a followed list is its primary's to
// publish. A follower's publisher signs none of its pages, and a node that
// published its own list before it followed another empties those pages
// once, so no stale list stands under its key.
func TestMirrorPublishesNoneOfTheList(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Options{})
	list := policies.NewBanList()
	var bans []policies.Ban
	for range 2000 {
		bans = append(bans, policies.Ban{PubKey: randomKey(""), Reason: "spam"})
	}
	list.SetBans(bans)
	list.SetWords([]string{"buy followers"})
	sk := nostr.GeneratePrivateKey()
	var rounds atomic.Int64
	run := func(s *sinkLog, mirror bool) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b := &BanList{List: list, Events: st.Events, Sink: s.sink, SecretKey: sk, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Every: 5 * time.Millisecond, Rest: -1, Mirror: mirror, Now: func() time.Time { rounds.Add(1); return time.Now() }}
		go func() { b.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	// 256 parts at 16 a round: 16 rounds see every part once, 40 twice.
	waitRounds := func(what string) {
		at := rounds.Load()
		testkit.WaitFor(t, 10*time.Second, what, func() bool { return rounds.Load() >= at+40 })
	}

	none := &sinkLog{st: storetest.Open(t, storetest.Options{}).Events}
	stop := run(none, true)
	waitRounds("every part of a new follower's list looked at twice")
	stop()
	if n := none.count(); n != 0 {
		t.Fatalf("a new follower published %d events of the list it follows", n)
	}

	own := &sinkLog{st: st.Events}
	stop = run(own, false)
	sorted, _ := list.Bans(0)
	all := len(BanPages(sorted)) + len(WordPages(list.Words()))
	testkit.WaitFor(t, 30*time.Second, "the node's own list published", func() bool { return own.count() == all })
	stop()

	emptied := &sinkLog{st: st.Events}
	stop = run(emptied, true)
	waitRounds("every part looked at twice")
	list.Ban(policies.Ban{PubKey: randomKey(""), Reason: "a delta of the primary"})
	list.AddWords("a word of the primary")
	waitRounds("every part looked at twice after a change")
	stop()
	last := map[string]nostr.Tags{}
	for _, ev := range append(own.evs, emptied.evs...) {
		last[ev.Tags.GetD()] = ev.Tags
	}
	for d, tags := range last {
		if digest(tags) != digest(emptyPage(d)) {
			t.Fatalf("page %q stands with %d tags under the key of a node that follows another's list", d, len(tags))
		}
	}
	if n := emptied.count(); n != all {
		t.Fatalf("the follower signed %d events, want the %d pages of its own list, each once and empty", n, all)
	}
}
