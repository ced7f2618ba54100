package events

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore"
	bbackend "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// The benchmarks run the same writes and queries against this store and
// against eventstore v0.17.8's badger backend (what outpost used before), each
// on its own badger database on disk holding the same 50,000 events:
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/storage/events/

const benchEvents = 50_000

// benchPubs are 500 authors; benchPubs[0] has 100 events per 500.
var benchPubs = func() []string {
	out := make([]string, 500)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range out {
		var b [32]byte
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		out[i] = fmt.Sprintf("%x", b)
	}
	return out
}()

// benchEvent is event i of the benchmark data: mostly notes, some reactions
// and articles, each with a topic out of 50 and a reference to another event.
func benchEvent(r *rand.Rand, i int) *nostr.Event {
	kind := 1
	switch n := r.IntN(20); {
	case n < 3:
		kind = 7
	case n == 3:
		kind = 30023
	}
	pk := benchPubs[r.IntN(len(benchPubs))]
	if i%5 == 0 {
		pk = benchPubs[0]
	}
	var ref [32]byte
	for j := range ref {
		ref[j] = byte(r.UintN(256))
	}
	tags := nostr.Tags{{"t", fmt.Sprintf("topic%d", r.IntN(50))}, {"e", fmt.Sprintf("%x", ref)}, {"p", benchPubs[r.IntN(len(benchPubs))]}}
	if kind == 30023 {
		tags = append(tags, nostr.Tag{"d", fmt.Sprintf("article-%d", i)})
	}
	content := fmt.Sprintf("note %d ", i) + strings.Repeat("lorem ipsum ", 16)
	return mkEvent(pk, kind, nostr.Timestamp(1_700_000_000+i), content, tags...)
}

// backend is what both stores are measured through: each one's own way to
// save an event and to hand its callers decoded events.
type backend interface {
	save(context.Context, *nostr.Event) error
	each(context.Context, nostr.Filter, func(*nostr.Event)) error
}

// viaFind is this store as the services use it (Save, Find).
type viaFind struct{ *Store }

func (s viaFind) save(ctx context.Context, ev *nostr.Event) error {
	_, err := s.Save(ctx, ev)
	return err
}

func (s viaFind) each(ctx context.Context, f nostr.Filter, fn func(*nostr.Event)) error {
	for ev, err := range s.Find(ctx, f) {
		if err != nil {
			return err
		}
		fn(ev)
	}
	return nil
}

// viaChannel is eventstore's badger backend as khatru uses it: a duplicate is
// eventstore.ErrDupEvent, events come on a channel.
type viaChannel struct{ *bbackend.BadgerBackend }

func (s viaChannel) save(ctx context.Context, ev *nostr.Event) error {
	if err := s.SaveEvent(ctx, ev); err != eventstore.ErrDupEvent {
		return err
	}
	return nil
}

func (s viaChannel) each(ctx context.Context, f nostr.Filter, fn func(*nostr.Event)) error {
	ch, err := s.QueryEvents(ctx, f)
	if err != nil {
		return err
	}
	for ev := range ch {
		fn(ev)
	}
	return nil
}

type fixture struct {
	ours *Store
	old  *bbackend.BadgerBackend
	dirs []string
}

var (
	benchOnce sync.Once
	bench     fixture
)

// seeded returns both stores holding the benchmark's 50,000 events, seeded
// once per test binary.
func seeded(b *testing.B) *fixture {
	benchOnce.Do(func() {
		ours, old := openBoth(b)
		r := rand.New(rand.NewPCG(3, 4))
		ctx := context.Background()
		for i := range benchEvents {
			ev := benchEvent(r, i)
			if _, err := ours.Save(ctx, ev); err != nil {
				b.Fatal(err)
			}
			if err := old.SaveEvent(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
		bench.ours, bench.old = ours, old
	})
	if bench.ours == nil {
		b.Fatal("seeding failed")
	}
	return &bench
}

func openBoth(tb testing.TB) (*Store, *bbackend.BadgerBackend) {
	dir, err := os.MkdirTemp("", "events-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	bench.dirs = append(bench.dirs, dir)
	// outpost's badger, as it serves, with badger's default block cache (256 MiB)
	db, err := kv.Settings{CacheSize: 512 << 20}.Open(dir+"/ours", quiet())
	if err != nil {
		tb.Fatal(err)
	}
	ours, err := Open(context.Background(), db, quiet())
	if err != nil {
		tb.Fatal(err)
	}
	old := &bbackend.BadgerBackend{Path: dir + "/eventstore", BadgerOptionsModifier: func(o badger.Options) badger.Options { return o.WithLogger(nil) }}
	if err := old.Init(); err != nil {
		tb.Fatal(err)
	}
	return ours, old
}

func TestMain(m *testing.M) {
	log.SetOutput(io.Discard) // eventstore's backend logs its migration with the log package
	code := m.Run()
	if bench.ours != nil {
		bench.ours.db.Close()
		bench.old.Close()
	}
	for _, d := range bench.dirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func BenchmarkSave(b *testing.B) {
	for _, name := range []string{"outpost", "eventstore"} {
		b.Run(name, func(b *testing.B) {
			o, e := openBoth(b)
			defer o.db.Close()
			defer e.Close()
			var st backend = viaFind{o}
			if name == "eventstore" {
				st = viaChannel{e}
			}
			r := rand.New(rand.NewPCG(5, 6))
			evs := make([]*nostr.Event, b.N)
			for i := range evs {
				evs[i] = benchEvent(r, i)
			}
			ctx := context.Background()
			b.ResetTimer()
			for _, ev := range evs {
				if err := st.save(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var benchFilters = []struct {
	name string
	f    nostr.Filter
}{
	{"kinds-limit-500", nostr.Filter{Kinds: []int{1}, Limit: 500}},
	{"author-limit-100", nostr.Filter{Authors: []string{benchPubs[0]}, Limit: 100}},
	{"3-authors-kind-limit-100", nostr.Filter{Authors: benchPubs[1:4], Kinds: []int{1}, Limit: 100}},
	{"tag-limit-100", nostr.Filter{Tags: nostr.TagMap{"t": {"topic7"}}, Limit: 100}},
	{"2-tags-kind-limit-100", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"topic7", "topic8"}}, Limit: 100}},
	{"tag-until-limit-100", nostr.Filter{Tags: nostr.TagMap{"t": {"topic7"}}, Until: ptr(nostr.Timestamp(1_700_000_000 + benchEvents/2)), Limit: 100}},
}

func ptr[T any](v T) *T { return &v }

// BenchmarkQuery reads decoded events from both stores, through Find and
// through eventstore's QueryEvents channel; "outpost-raw" is Query, which
// hands out the stored JSON without decoding it.
func BenchmarkQuery(b *testing.B) {
	fx := seeded(b)
	ctx := context.Background()
	for _, bf := range benchFilters {
		b.Run(bf.name, func(b *testing.B) {
			for _, name := range []string{"outpost", "eventstore"} {
				var st backend = viaFind{fx.ours}
				if name == "eventstore" {
					st = viaChannel{fx.old}
				}
				b.Run(name, func(b *testing.B) {
					n := 0
					for b.Loop() {
						if err := st.each(ctx, bf.f, func(*nostr.Event) { n++ }); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(n)/float64(b.N), "events/op")
				})
			}
			b.Run("outpost-raw", func(b *testing.B) {
				n := 0
				for b.Loop() {
					if err := fx.ours.Query(ctx, bf.f, nil, func(Meta, []byte) bool { n++; return true }); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)/float64(b.N), "events/op")
			})
		})
	}
}

func BenchmarkCount(b *testing.B) {
	fx := seeded(b)
	ctx := context.Background()
	for _, bf := range []struct {
		name string
		f    nostr.Filter
	}{
		{"kind", nostr.Filter{Kinds: []int{7}}},
		{"tag", nostr.Filter{Tags: nostr.TagMap{"t": {"topic7"}}}},
	} {
		b.Run(bf.name, func(b *testing.B) {
			b.Run("outpost", func(b *testing.B) {
				for b.Loop() {
					if _, err := fx.ours.Count(ctx, []nostr.Filter{bf.f}, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("eventstore", func(b *testing.B) {
				for b.Loop() {
					if _, err := fx.old.CountEvents(ctx, bf.f); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkDeletionCheck is the NIP-09 check the relay runs on every event
// it takes in, for events no one deleted (nearly all): the tombstone lookup
// (Deleted), and the query it replaced — the author's kind-5 events naming
// the id in an e tag.
func BenchmarkDeletionCheck(b *testing.B) {
	s := seeded(b).ours
	r := rand.New(rand.NewPCG(7, 8))
	evs := make([]*nostr.Event, 1024)
	for i := range evs {
		evs[i] = benchEvent(r, benchEvents+i)
	}
	ctx := context.Background()
	b.Run("tombstone", func(b *testing.B) {
		for i := range b.N {
			ev := evs[i%len(evs)]
			if deleted, err := s.Deleted(ctx, ev.ID, ev.PubKey); deleted || err != nil {
				b.Fatal(deleted, err)
			}
		}
	})
	b.Run("query", func(b *testing.B) {
		for i := range b.N {
			ev := evs[i%len(evs)]
			f := nostr.Filter{Kinds: []int{nostr.KindDeletion}, Authors: []string{ev.PubKey}, Tags: nostr.TagMap{"e": {ev.ID}}, Limit: 1}
			if err := s.Query(ctx, f, nil, func(Meta, []byte) bool { b.Fatal("found"); return false }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
