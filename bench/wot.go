package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit/wottest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// wotMain measures the web of trust at a size (issue "Trust from the social
// graph"): the seeded graph of package wottest — an honest population with
// Zipf follow counts and a sybil region behind attack edges — is saved as
// kind-3 events in the relay's store; then fresh processes (wot-load) build
// the graph from the events three times — a first start, the first restart
// after it (badger still compacting the ingest, on the same heap) and a
// second — and report the build time, its memory, an incremental update of
// one changed list and lookups per second.
//
//	go run ./bench wot [-lists 200000] [-depth 6] [-dir /var/tmp/wot]
func wotMain(args []string) error {
	fs := flag.NewFlagSet("wot", flag.ContinueOnError)
	lists := fs.Int("lists", 200_000, "contact lists in all, 10,000 of them the sybil region's")
	depth := fs.Int("depth", 6, "the web of trust's depth: 6 holds about every honest list reached, 2 is the default setting")
	dir := fs.String("dir", "", "data dir (default: a temporary one, removed after)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "wot-bench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	spec := wotSpec(*lists)
	start := time.Now()
	follows, err := saveWotEvents(*dir, wottest.Generate(spec))
	if err != nil {
		return err
	}
	fmt.Printf("web of trust: %d contact lists, %d follows (seed %d), depth %d; saved as events in %v\n", spec.Honest+spec.Sybils, follows, spec.Seed, *depth, time.Since(start).Round(time.Millisecond))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, when := range []string{"first start, from the relay's events", "first restart", "second restart"} {
		var r wotLoad
		if err := runJSON(&r, self, "wot-load", "-dir", *dir, "-lists", fmt.Sprint(*lists), "-depth", fmt.Sprint(*depth)); err != nil {
			return err
		}
		fmt.Printf(" %s:\n", when)
		printWotLoad(r)
	}
	return nil
}

// saveWotEvents saves g's lists as kind-3 events (unsigned: the store checks
// ids, the relay signatures), a batch at a time so that the events of all
// 200,000 lists are never in memory at once; it returns the follows saved.
func saveWotEvents(dir string, g *wottest.Graph) (int, error) {
	st, err := store.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return 0, err
	}
	defer st.Close()
	follows := 0
	for i := 0; i < len(g.Lists); i += 1_000 {
		var evs []*nostr.Event
		for _, l := range g.Lists[i:min(i+1_000, len(g.Lists))] {
			ev := &nostr.Event{Kind: nostr.KindFollowList, PubKey: hex.EncodeToString(l.Author[:]), CreatedAt: nostr.Timestamp(l.At), Tags: make(nostr.Tags, 0, len(l.Follows))}
			for _, f := range l.Follows {
				ev.Tags = append(ev.Tags, nostr.Tag{"p", hex.EncodeToString(f[:])})
			}
			ev.ID = ev.GetID()
			evs, follows = append(evs, ev), follows+len(l.Follows)
		}
		if _, _, err := st.Events.SaveBatch(context.Background(), evs); err != nil {
			return 0, err
		}
	}
	return follows, nil
}

func printWotLoad(r wotLoad) {
	fmt.Printf("  build: %v load and walk, %v first rank; %d lists held, %d follows, %d keys, %d members\n",
		r.Load.Round(time.Millisecond), r.Rank.Round(time.Millisecond), r.Lists, r.Follows, r.Keys, r.Members)
	fmt.Printf("  memory after the build: anonymous %s (peak during it %s), RSS %s (file %s, peak %s); Go heap %s in use, %s of it before the build\n",
		mib(r.Mem.Anon), mib(r.AnonPeak), mib(r.Mem.RSS), mib(r.Mem.File), mib(r.Mem.Peak), mib(r.Heap), mib(r.HeapBefore))
	fmt.Printf("  incremental update of a seed's list: %v (hops and followers); of a leaf's list: %v\n", r.UpdateSeed.Round(time.Microsecond), r.UpdateLeaf.Round(time.Microsecond))
	fmt.Printf("  lookups: %.0f/s on %d goroutines\n", r.Lookups, runtime.GOMAXPROCS(0))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// wotSpec is the bench's graph: 10,000 sybils each following 100 others,
// 10 attack edges, the rest honest.
func wotSpec(lists int) wottest.Spec {
	return wottest.Spec{Seed: 85, Honest: lists - 10_000, Seeds: 3, MinFollows: 5, MaxExtra: 2_000, SeedFollows: 150,
		Sybils: 10_000, SybilFollows: 100, AttackEdges: 10}
}

func wotSettings(g *wottest.Graph, depth int) wot.Settings {
	cfg := wot.DefaultSettings()
	cfg.Depth = depth
	for _, s := range g.Seeds {
		cfg.Seeds = append(cfg.Seeds, fmt.Sprintf("%x", s[:]))
	}
	return cfg
}

// wotLoad is what wot-load measures.
type wotLoad struct {
	Load, Rank, UpdateSeed, UpdateLeaf time.Duration
	Heap, HeapBefore                   int64 // Go heap in use after the build, and before it (the store's own: badger's cache and tables)
	Mem                                mem
	AnonPeak                           int64 // the most anonymous memory seen during the build
	Lists, Follows, Keys, Members      int
	Lookups                            float64
}

// wotLoadMain builds the web of trust from the store in this fresh process
// and measures it; it prints wotLoad as JSON.
func wotLoadMain(args []string) error {
	fs := flag.NewFlagSet("wot-load", flag.ContinueOnError)
	dir := fs.String("dir", "", "data dir")
	lists := fs.Int("lists", 200_000, "as given to wot")
	depth := fs.Int("depth", 6, "as given to wot")
	memprofile := fs.String("memprofile", "", "write the heap profile after the build here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The seeds and the keys looked up, again from the seed, without the
	// lists (which would take the memory measured).
	g := wottest.Generate(wotSpec(*lists))
	seeds, honest := g.Seeds, g.Honest
	seedList := g.Lists[0]
	cfg := wotSettings(g, *depth)
	g = nil
	runtime.GC()
	st, err := store.Open(filepath.Clean(*dir), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := wot.New(wot.Config{Settings: cfg, DB: st.DB, Events: st.Events})
	if err != nil {
		return err
	}
	var r wotLoad
	stopPeak := anonPeak(&r.AnonPeak)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapBefore = int64(ms.HeapInuse)
	start := time.Now()
	if err := w.Load(context.Background()); err != nil {
		return err
	}
	r.Load = time.Since(start)
	start = time.Now()
	w.Rerank()
	r.Rank = time.Since(start)
	stopPeak()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.Heap, r.Mem, r.Lists, r.Members = int64(ms.HeapInuse), procMem(os.Getpid()), w.Lists(), w.Members()
	r.Keys, r.Follows, _ = w.Size()
	if err := writeHeapProfile(*memprofile); err != nil {
		return err
	}

	// A seed unfollows a key and follows it again, and a leaf's list is
	// replaced twice; the second of each is measured. Both are newer than
	// any list an earlier run stored and differ from the first, so each
	// changes the graph (the walk runs again), whatever the store held.
	now := uint32(time.Now().Unix())
	leaf := wot.List{Author: honest[len(honest)-1], Follows: seeds}
	unfollowed := slices.DeleteFunc(slices.Clone(seedList.Follows), func(k wot.Key) bool { return k == seedList.Follows[0] })
	if r.UpdateSeed, err = update(w, seedList, unfollowed, now); err != nil {
		return err
	}
	if r.UpdateLeaf, err = update(w, leaf, seeds[1:], now); err != nil {
		return err
	}
	r.Lookups = lookups(w, honest, time.Second)
	return json.NewEncoder(os.Stdout).Encode(r)
}

// update sets l's list to first, then at once back to l's follows, and
// times the second.
func update(w *wot.WoT, l wot.List, first []wot.Key, now uint32) (time.Duration, error) {
	if err := w.SetLists([]wot.List{{Author: l.Author, At: now, Follows: first}}); err != nil {
		return 0, err
	}
	start := time.Now()
	err := w.SetLists([]wot.List{{Author: l.Author, At: now + 1, Follows: l.Follows}})
	return time.Since(start), err
}

// anonPeak samples the anonymous memory of this process into peak until
// the function it returns is called.
func anonPeak(peak *int64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			*peak = max(*peak, procMem(os.Getpid()).Anon)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// lookups is Standing calls per second over d, on every core.
func lookups(w *wot.WoT, keys []wot.Key, d time.Duration) float64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for g := range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			c := 0
			for time.Now().Before(stop) {
				for range 1000 {
					w.Standing(keys[r.IntN(len(keys))])
				}
				c += 1000
			}
			n.Add(int64(c))
		})
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds()
}

func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.WriteHeapProfile(f)
}
