package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// The query mix's data (issue 27): a Nostr population in which a few
// authors write most events and a long tail writes a few, as relays see it.
// It is deterministic for a seed and a size (the PRNG is seeded, the keys
// derived from the seed), signed, and cached as JSONL, because signing
// millions of events takes minutes.

// mixVersion names the generator in the cache's file names: a change to
// what it writes must change it, or a run would reuse stale data.
const mixVersion = "v1"

// mixEnd is the newest created_at of the data: fixed, so the data does not
// depend on when it was made; every event is within half a year before it,
// inside strfry's default window (three years old to 15 minutes ahead) until 2029.
const mixEnd = 1_775_000_000 // 2026-03-31

const mixSpan = 180 * 24 * 3600

// zipfS is the exponent of every Zipf draw: authors' activity, whom they
// follow and mention, and the queries' keys.
const zipfS = 1.1

// mixKeys is what the queries draw their keys from, saved next to the events.
type mixKeys struct {
	Events  int       `json:"events"`
	Authors []string  `json:"authors"` // public keys by activity: authors[0] writes the most
	Follows [][]int32 `json:"follows"` // follows[i] is the contact list of authors[i]; the first len(Follows) authors are the active ones
	Threads []string  `json:"threads"` // thread roots, each as often as replies name it (a reservoir sample of the replies' roots)
}

// mixPlan is the population for n events.
type mixPlan struct {
	n, authors, active, follows int
}

func planMix(n int) mixPlan {
	a := min(max(n/100, 50), 50_000)
	return mixPlan{n: n, authors: a, active: max(a/5, 1), follows: min(300, a-1)}
}

// mixFiles are the cached events and keys for seed and n under dir.
func mixFiles(dir string, seed uint64, n int) (events, keys string) {
	base := filepath.Join(dir, fmt.Sprintf("mix-%s-s%d-n%d", mixVersion, seed, n))
	return base + ".jsonl", base + ".keys.json"
}

// ensureMix makes the cached events and keys unless they are there already.
func ensureMix(dir string, seed uint64, n int) (events string, keys *mixKeys, err error) {
	events, keysPath := mixFiles(dir, seed, n)
	if _, err := os.Stat(events); err != nil {
		step(fmt.Sprintf("generating and signing %d events of the mix into %s", n, events))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		if err := generateMix(events, keysPath, seed, n); err != nil {
			return "", nil, err
		}
	}
	b, err := os.ReadFile(keysPath)
	if err != nil {
		return "", nil, err
	}
	keys = &mixKeys{}
	return events, keys, json.Unmarshal(b, keys)
}

// mixGen is the generator's state: what later events refer to.
type mixGen struct {
	plan    mixPlan
	r       *rand.Rand
	author  *rand.Zipf // activity rank of an event's author
	recent  *rand.Zipf // how far back a reply or reaction reaches, in notes
	pks     []string
	sk      map[string]string // secret key by public key
	follows [][]int32
	notes   []ref   // every note, oldest first
	roots   []int32 // indexes into notes of the thread roots
	last    []int32 // last[i]: the newest note of roots[i]'s thread
	threads []string
	replies int
}

type ref struct {
	id     string
	author int32
}

func newMixGen(seed uint64, n int) *mixGen {
	p := planMix(n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	g := &mixGen{plan: p, r: r,
		author: rand.NewZipf(r, zipfS, 1, uint64(p.authors-1)),
		recent: rand.NewZipf(r, zipfS, 50, 1<<30)}
	g.sk = make(map[string]string, p.authors)
	for i := range p.authors {
		h := sha256.Sum256(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, seed), uint64(i)))
		sk := hex.EncodeToString(h[:])
		pk, _ := nostr.GetPublicKey(sk)
		g.pks, g.sk[pk] = append(g.pks, pk), sk
	}
	for i := range p.active {
		g.follows = append(g.follows, g.distinctAuthors(p.follows, int32(i)))
	}
	return g
}

// distinctAuthors draws k different authors other than self from the
// activity distribution: people follow and mention the prolific more.
func (g *mixGen) distinctAuthors(k int, self int32) []int32 {
	seen := map[int32]bool{self: true}
	out := make([]int32, 0, k)
	for tries := 0; len(out) < k; tries++ {
		a := int32(g.author.Uint64())
		if tries > 20*k { // the head is taken: the tail, uniformly
			a = int32(g.r.IntN(g.plan.authors))
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// back is an index into a list of n, newest most likely.
func (g *mixGen) back(n int) int {
	k := int(g.recent.Uint64())
	if k >= n {
		k = g.r.IntN(n)
	}
	return n - 1 - k
}

var mixWords = strings.Fields(`the a and to of in it is that for on with this was just so but not you are
gm nostr relay zap sats bitcoin lightning cashu mint ecash coffee today morning build shipping code
freedom censorship client keys note thread reply love great thanks why how when what really good new
week people world open protocol signal money time work life music photo run bike walk city weather`)

var reactionContents = []string{"+", "+", "+", "+", "🤙", "❤️", "🔥", "😂", "-"}

// content is a note of 50 to 500 characters, most near the short end.
func (g *mixGen) content() string {
	n := 50 + int(450*g.r.Float64()*g.r.Float64())
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(mixWords[g.r.IntN(len(mixWords))])
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String()[:n])
}

// event is the i-th of total activity events (notes, reactions, reposts),
// its author drawn by activity; unsigned, its id set.
func (g *mixGen) event(i, total int) nostr.Event {
	at := nostr.Timestamp(mixEnd - mixSpan + int64(i)*mixSpan/int64(total))
	a := int32(g.author.Uint64())
	ev := nostr.Event{CreatedAt: at, PubKey: g.pks[a], Tags: nostr.Tags{}}
	u := g.r.Float64()
	switch {
	case len(g.notes) == 0 || u < 0.45:
		ev.Kind, ev.Content = 1, g.content()
		thread := g.noteTags(&ev, a)
		ev.ID = ev.GetID()
		g.addNote(ev.ID, a, thread)
		return ev
	case u < 0.85:
		t := g.notes[g.back(len(g.notes))]
		ev.Kind, ev.Content = 7, reactionContents[g.r.IntN(len(reactionContents))]
		ev.Tags = nostr.Tags{{"e", t.id}, {"p", g.pks[t.author]}, {"k", "1"}}
	default:
		t := g.notes[g.roots[g.back(len(g.roots))]]
		ev.Kind = 6
		ev.Tags = nostr.Tags{{"e", t.id, ""}, {"p", g.pks[t.author]}}
	}
	ev.ID = ev.GetID()
	return ev
}

// noteTags makes 40% of notes replies in a thread (NIP-10 marked e tags to
// the root and the note replied to, p tags to both authors), and tags some
// of the rest with a mention or a hashtag. It returns the index of the
// thread in g.roots the note replies in, -1 for a new root.
func (g *mixGen) noteTags(ev *nostr.Event, a int32) int {
	if len(g.roots) > 0 && g.r.Float64() < 0.4 {
		t := g.back(len(g.roots))
		root, parent := g.notes[g.roots[t]], g.notes[g.last[t]]
		ev.Tags = append(ev.Tags, nostr.Tag{"e", root.id, "", "root"})
		if parent.id != root.id {
			ev.Tags = append(ev.Tags, nostr.Tag{"e", parent.id, "", "reply"}, nostr.Tag{"p", g.pks[parent.author]})
		}
		if root.author != a {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", g.pks[root.author]})
		}
		return t
	}
	if g.r.Float64() < 0.1 {
		ev.Tags = append(ev.Tags, nostr.Tag{"p", g.pks[g.author.Uint64()]})
	}
	if g.r.Float64() < 0.1 {
		ev.Tags = append(ev.Tags, nostr.Tag{"t", mixWords[g.r.IntN(len(mixWords))]})
	}
	return -1
}

// addNote records a note for later replies, reactions and reposts, and
// samples the roots replies name (the thread queries' keys).
func (g *mixGen) addNote(id string, a int32, thread int) {
	g.notes = append(g.notes, ref{id, a})
	at := int32(len(g.notes) - 1)
	if thread < 0 {
		g.roots, g.last = append(g.roots, at), append(g.last, at)
		return
	}
	g.last[thread] = at
	root := g.notes[g.roots[thread]].id
	g.replies++
	const reservoir = 20_000
	if len(g.threads) < reservoir {
		g.threads = append(g.threads, root)
	} else if k := g.r.IntN(g.replies); k < reservoir {
		g.threads[k] = root
	}
}

// special is the i-th profile or contact list: every author's kind 0, and
// the active authors' kind 3 with their follows.
func (g *mixGen) special(i int, at nostr.Timestamp) nostr.Event {
	a := i
	ev := nostr.Event{CreatedAt: at, Kind: 0, Tags: nostr.Tags{}}
	if i >= g.plan.authors {
		a = i - g.plan.authors
		ev.Kind = 3
		for _, f := range g.follows[a] {
			ev.Tags = append(ev.Tags, nostr.Tag{"p", g.pks[f]})
		}
	} else {
		b, _ := json.Marshal(map[string]string{"name": fmt.Sprintf("user%d", a), "about": g.content(),
			"picture": fmt.Sprintf("https://example.com/avatars/%d.png", a), "nip05": fmt.Sprintf("user%d@example.com", a)})
		ev.Content = string(b)
	}
	ev.PubKey = g.pks[a]
	return ev
}

// generateMix writes n signed events (in created_at order) to eventsPath
// and the queries' keys to keysPath, each through a temporary file renamed
// at the end, so an interrupted run leaves no half file behind.
func generateMix(eventsPath, keysPath string, seed uint64, n int) error {
	g := newMixGen(seed, n)
	p := g.plan
	specials := p.authors + p.active
	activity := n - specials
	if activity < 1 {
		return fmt.Errorf("mix: %d events are too few for %d profiles and %d contact lists", n, p.authors, p.active)
	}
	f, err := os.Create(eventsPath + ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	batch := make([]nostr.Event, 0, 8192)
	flush := func() error {
		if err := signAll(batch, g); err != nil {
			return err
		}
		for i := range batch {
			b, _ := batch[i].MarshalJSON()
			w.Write(b)
			w.WriteByte('\n')
		}
		batch = batch[:0]
		return nil
	}
	s := 0
	for i := range activity {
		ev := g.event(i, activity)
		// Profiles and contact lists spread evenly among the rest.
		for ; s < specials && s*activity <= i*specials; s++ {
			batch = append(batch, g.special(s, ev.CreatedAt))
		}
		batch = append(batch, ev)
		if len(batch) >= 8192 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	keys, _ := json.Marshal(mixKeys{Events: n, Authors: g.pks, Follows: g.follows, Threads: g.threads})
	if err := os.WriteFile(keysPath, keys, 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), eventsPath)
}

// signAll signs the events on every core, each with its author's key.
func signAll(evs []nostr.Event, g *mixGen) error {
	var wg sync.WaitGroup
	errs := make([]error, runtime.NumCPU())
	for w := range errs {
		wg.Go(func() {
			for i := w; i < len(evs); i += len(errs) {
				if err := evs[i].Sign(g.sk[evs[i].PubKey]); err != nil {
					errs[w] = err
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// mixGenMain makes the mix's cached events ahead of a run (go run ./bench
// mixgen -events 5000000): generating and signing millions takes minutes.
func mixGenMain(args []string) error {
	fs := flag.NewFlagSet("mixgen", flag.ExitOnError)
	n := fs.Int("events", 1_000_000, "events")
	seed := fs.Uint64("seed", 1, "seed")
	cache := fs.String("cache", defaultMixCache(), "cache dir")
	filters := fs.String("filters", "", "also write the filters of the first -rounds rounds into this dir, as a run draws them (mix-<shape>-<round>.filters)")
	rounds := fs.Int("rounds", 3, "rounds of filters, with -filters")
	more := fs.Bool("more", false, "with -filters, the other queries clients send too (see moreShapes)")
	fs.Parse(args)
	events, keys, err := ensureMix(*cache, *seed, *n)
	if err != nil {
		return err
	}
	fmt.Println(events)
	if *filters == "" {
		return nil
	}
	if err := os.MkdirAll(*filters, 0o755); err != nil {
		return err
	}
	var sample *mixSample
	if *more {
		if sample, err = sampleMix(events, *n, *seed); err != nil {
			return err
		}
	}
	for round := range *rounds {
		if _, err := writeMixFilters(keys, sample, *seed, round, mixFiltersPerShape(false), *filters); err != nil {
			return err
		}
	}
	return nil
}

// defaultMixCache is the user's cache dir's outpost-bench.
func defaultMixCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "outpost-bench")
}
