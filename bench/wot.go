package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit/wottest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// wotMain measures the web of trust at a size (issue "Trust from the social
// graph"): the seeded graph of package wottest — an honest population with
// Zipf follow counts and a sybil region behind attack edges — is stored,
// then a fresh process (wot-load) builds the graph from the store as a
// restart does and reports the build time, its memory, an incremental
// update of one changed list and lookups per second.
//
//	go run ./bench wot [-lists 200000] [-dir /var/tmp/wot]
func wotMain(args []string) error {
	fs := flag.NewFlagSet("wot", flag.ContinueOnError)
	lists := fs.Int("lists", 200_000, "contact lists in all, 10,000 of them the sybil region's")
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
	g := wottest.Generate(spec)
	follows := 0
	for _, l := range g.Lists {
		follows += len(l.Follows)
	}
	st, err := store.Open(*dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	w, err := wot.New(wot.Config{Settings: wotSettings(g), DB: st.DB})
	if err != nil {
		return err
	}
	start := time.Now()
	for i := 0; i < len(g.Lists); i += 5_000 {
		if err := w.SetLists(g.Lists[i:min(i+5_000, len(g.Lists))]); err != nil {
			return err
		}
	}
	stored := time.Since(start)
	if err := st.Close(); err != nil {
		return err
	}
	g, w = nil, nil
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("web of trust: %d contact lists, %d follows (seed %d); stored in %v\n", spec.Honest+spec.Sybils, follows, spec.Seed, stored.Round(time.Millisecond))
	// The first restart after the ingest meets badger compacting what was
	// just written, on the same heap; the second is a restart as usual.
	for _, when := range []string{"first restart, badger compacting the ingest", "second restart"} {
		var r wotLoad
		if err := runJSON(&r, self, "wot-load", "-dir", *dir, "-lists", fmt.Sprint(*lists)); err != nil {
			return err
		}
		fmt.Printf(" %s:\n", when)
		printWotLoad(r)
	}
	return nil
}

func printWotLoad(r wotLoad) {
	fmt.Printf("  build from the store (restart): %v load and walk, %v first rank\n", r.Load.Round(time.Millisecond), r.Rank.Round(time.Millisecond))
	fmt.Printf("  memory after the build: the graph %s of Go heap (%s in use, %s of it the store's before the build), RSS %s (anonymous %s, file %s); keys %d, members %d\n",
		mib(r.Heap-r.HeapBefore), mib(r.Heap), mib(r.HeapBefore), mib(r.Mem.RSS), mib(r.Mem.Anon), mib(r.Mem.File), r.Keys, r.Members)
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

func wotSettings(g *wottest.Graph) wot.Settings {
	cfg := wot.DefaultSettings()
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
	Keys, Members                      int
	Lookups                            float64
}

// wotLoadMain builds the web of trust from the store in this fresh process
// and measures it; it prints wotLoad as JSON.
func wotLoadMain(args []string) error {
	fs := flag.NewFlagSet("wot-load", flag.ContinueOnError)
	dir := fs.String("dir", "", "data dir")
	lists := fs.Int("lists", 200_000, "as given to wot")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The seeds and the keys looked up, again from the seed, without the
	// lists (which would take the memory measured).
	g := wottest.Generate(wotSpec(*lists))
	seeds, honest := g.Seeds, g.Honest
	seedList := g.Lists[0]
	cfg := wotSettings(g)
	g = nil
	runtime.GC()
	st, err := store.Open(filepath.Clean(*dir), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := wot.New(wot.Config{Settings: cfg, DB: st.DB})
	if err != nil {
		return err
	}
	var r wotLoad
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
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.Heap, r.Mem, r.Keys, r.Members = int64(ms.HeapInuse), procMem(os.Getpid()), len(honest)+10_000, w.Members()

	seedList.At++ // a seed unfollows one key: the walk runs again
	seedList.Follows = seedList.Follows[1:]
	start = time.Now()
	if err := w.SetLists([]wot.List{seedList}); err != nil {
		return err
	}
	r.UpdateSeed = time.Since(start)
	leaf := wot.List{Author: honest[len(honest)-1], At: 2, Follows: seeds}
	start = time.Now()
	if err := w.SetLists([]wot.List{leaf}); err != nil {
		return err
	}
	r.UpdateLeaf = time.Since(start)
	r.Lookups = lookups(w, honest, time.Second)
	return json.NewEncoder(os.Stdout).Encode(r)
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
