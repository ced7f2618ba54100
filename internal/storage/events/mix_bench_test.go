package events

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// BenchmarkMix answers the queries clients send most (issue #27's shapes)
// over a store of a Zipf-distributed population: a few heavy authors and a
// long tail, notes in threads, reactions, reposts, one profile and one
// contact list per author. Every query draws its keys from that same
// distribution, so no one key stays in a cache; the figures are per query.
//
//	go test -run '^$' -bench Mix -mix.events 200000 ./internal/storage/events/
//
// -mix.dir keeps the seeded store between runs (it is seeded once per size).
var (
	mixEvents = flag.Int("mix.events", 100_000, "events in BenchmarkMix's store")
	mixDir    = flag.String("mix.dir", "", "keep BenchmarkMix's store here (default: a temp dir, removed)")
	mixCache  = flag.Int("mix.cache", 0, "kv's CacheSize in MiB (0: its default)")
)

// mixData is the population and the store holding it.
type mixData struct {
	st      *Store
	authors []string   // by rank: authors[0] posts most
	follows [][]string // contact lists of the active authors
	roots   []string   // thread roots
}

var (
	mixOnce sync.Once
	mixFx   *mixData
)

// mixZipf draws author ranks from r: Zipf with s = 1.1 over n authors.
func mixZipf(r *rand.Rand, n int) func() int {
	z := rand.NewZipf(r, 1.1, 1, uint64(n-1))
	return func() int { return int(z.Uint64()) }
}

func mixSeed(b testing.TB) *mixData {
	mixOnce.Do(func() {
		n := *mixEvents
		nAuthors := max(n/40, 50)
		d := &mixData{}
		r := rand.New(rand.NewPCG(27, uint64(n)))
		zipf := mixZipf(r, nAuthors)
		for range nAuthors {
			var pk [32]byte
			for j := range pk {
				pk[j] = byte(r.UintN(256))
			}
			d.authors = append(d.authors, fmt.Sprintf("%x", pk))
		}
		dir := *mixDir
		fresh := false
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "events-mix-"); err != nil {
				b.Fatal(err)
			}
			bench.dirs = append(bench.dirs, dir)
		}
		dir = fmt.Sprintf("%s/%d", dir, n)
		if _, err := os.Stat(dir); err != nil {
			fresh = true
		}
		set := kv.Settings{CacheSize: settings.Bytes(*mixCache) << 20}
		db, err := set.Open(dir, quiet())
		if err != nil {
			b.Fatal(err)
		}
		if d.st, err = Open(context.Background(), db, quiet()); err != nil {
			b.Fatal(err)
		}
		d.st.Cache(set.EventCache()) // as outpost serves
		ctx := context.Background()
		save := func(ev *nostr.Event) {
			if fresh {
				if _, err := d.st.Save(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		const t0 = 1_700_000_000
		body := strings.Repeat("lorem ipsum dolor sit amet ", 12)
		for i, a := range d.authors {
			save(mkEvent(a, 0, t0, fmt.Sprintf(`{"name":"user%d","about":%q}`, i, body[:80])))
			if i < nAuthors/3 {
				var follows nostr.Tags
				seen := map[int]bool{}
				for len(follows) < min(300, nAuthors/2) {
					k := zipf()
					if !seen[k] {
						seen[k] = true
						follows = append(follows, nostr.Tag{"p", d.authors[k]})
					}
				}
				var list []string
				for _, t := range follows {
					list = append(list, t[1])
				}
				d.follows = append(d.follows, list)
				save(mkEvent(a, 3, t0, "", follows...))
			}
		}
		var notes []*nostr.Event
		for i := 0; i < n-len(d.authors)-len(d.follows); i++ {
			a := d.authors[zipf()]
			at := nostr.Timestamp(t0 + i*10)
			var ev *nostr.Event
			switch x := r.IntN(100); {
			case x < 40 || len(notes) < 10: // a note, a fifth of them replies
				tags := nostr.Tags{}
				if len(notes) > 0 && r.IntN(5) == 0 {
					root := notes[r.IntN(len(notes))]
					tags = nostr.Tags{{"e", root.ID, "", "root"}, {"p", root.PubKey}}
				}
				ev = mkEvent(a, 1, at, body[:50+r.IntN(len(body)-50)], tags...)
				if len(tags) == 0 {
					notes = append(notes, ev)
					if r.IntN(4) == 0 {
						d.roots = append(d.roots, ev.ID)
					}
				}
			case x < 85: // a reaction to a recent note
				target := notes[max(0, len(notes)-1-r.IntN(min(len(notes), 2000)))]
				ev = mkEvent(a, 7, at, "+", nostr.Tag{"e", target.ID}, nostr.Tag{"p", target.PubKey})
			default: // a repost
				target := notes[r.IntN(len(notes))]
				ev = mkEvent(a, 6, at, "", nostr.Tag{"e", target.ID}, nostr.Tag{"p", target.PubKey})
			}
			save(ev)
		}
		mixFx = d
	})
	if mixFx == nil {
		b.Fatal("seeding failed")
	}
	return mixFx
}

func BenchmarkMix(b *testing.B) {
	d := mixSeed(b)
	ctx := context.Background()
	var zipf func() int
	pick := func(k int) []string {
		out := make([]string, 0, k)
		for range k {
			out = append(out, d.authors[zipf()])
		}
		return out
	}
	shapes := []struct {
		name   string
		filter func(r *rand.Rand) nostr.Filter
	}{
		{"home-feed", func(r *rand.Rand) nostr.Filter {
			return nostr.Filter{Authors: d.follows[r.IntN(len(d.follows))], Kinds: []int{1, 6}, Limit: 500}
		}},
		{"profiles", func(r *rand.Rand) nostr.Filter {
			return nostr.Filter{Kinds: []int{0}, Authors: pick(300)}
		}},
		{"one-author", func(r *rand.Rand) nostr.Filter {
			return nostr.Filter{Authors: pick(1), Limit: 100}
		}},
		{"thread", func(r *rand.Rand) nostr.Filter {
			return nostr.Filter{Tags: nostr.TagMap{"e": {d.roots[r.IntN(len(d.roots))]}}, Kinds: []int{1, 7}, Limit: 500}
		}},
		{"notifications", func(r *rand.Rand) nostr.Filter {
			return nostr.Filter{Tags: nostr.TagMap{"p": pick(1)}, Limit: 100}
		}},
		{"global", func(r *rand.Rand) nostr.Filter {
			return nostr.Filter{Kinds: []int{1}, Limit: 500}
		}},
	}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			zipf = mixZipf(r, len(d.authors))
			n := 0
			for b.Loop() {
				if err := d.st.Query(ctx, sh.filter(r), nil, func(Meta, []byte) bool { n++; return true }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "events/op")
		})
	}
}
