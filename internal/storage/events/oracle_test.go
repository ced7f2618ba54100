package events

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip40"
)

// The store is checked against a model: a plain list of the events NIP-01
// says a relay holds after the same writes, queried by brute force with
// go-nostr's own Filter.Matches, sorted and cut at the limit.

type model struct {
	events map[string]*nostr.Event
	now    nostr.Timestamp
}

func (m *model) save(ev *nostr.Event) {
	if m.events[ev.ID] != nil {
		return
	}
	if nostr.IsReplaceableKind(ev.Kind) || nostr.IsAddressableKind(ev.Kind) {
		for id, old := range m.events {
			if old.Kind != ev.Kind || old.PubKey != ev.PubKey ||
				nostr.IsAddressableKind(ev.Kind) && old.Tags.GetD() != ev.Tags.GetD() {
				continue
			}
			if old.CreatedAt > ev.CreatedAt || old.CreatedAt == ev.CreatedAt && old.ID < ev.ID {
				return // a newer version is kept
			}
			delete(m.events, id)
		}
	}
	m.events[ev.ID] = ev
}

func (m *model) live(ev *nostr.Event) bool {
	exp := nip40.GetExpiration(ev.Tags)
	return exp == -1 || exp > m.now
}

func (m *model) query(f nostr.Filter) []string {
	if f.LimitZero || f.Search != "" {
		return nil
	}
	var out []*nostr.Event
	for _, ev := range m.events {
		if m.live(ev) && f.Matches(ev) {
			out = append(out, ev)
		}
	}
	slices.SortFunc(out, func(a, b *nostr.Event) int {
		if c := cmp.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	ids := make([]string, len(out))
	for i, ev := range out {
		ids[i] = ev.ID
	}
	return ids
}

// deleted is NIP-09 by id: a live kind 5 of the event's author names it in
// an e tag. Only an id can be deleted (Deleted's id is an event's).
func (m *model) deleted(id, pubkey string) bool {
	if !nostr.IsValid32ByteHex(id) {
		return false
	}
	for _, ev := range m.events {
		if ev.Kind == nostr.KindDeletion && ev.PubKey == pubkey && m.live(ev) &&
			slices.ContainsFunc(ev.Tags, func(t nostr.Tag) bool { return len(t) >= 2 && t[0] == "e" && t[1] == id }) {
			return true
		}
	}
	return false
}

func (m *model) count(filters []nostr.Filter) int64 {
	var n int64
	for _, ev := range m.events {
		if m.live(ev) && slices.ContainsFunc(filters, func(f nostr.Filter) bool { return f.Search == "" && f.Matches(ev) }) {
			n++
		}
	}
	return n
}

// gen makes random events and filters from a small pool of values, so that
// filters often hit, values share prefixes and timestamps tie.
type gen struct {
	r      *rand.Rand
	base   nostr.Timestamp
	ids    []string    // of events made so far
	named  [][2]string // the e tags of deletion requests: id, and the request's author and another
	hexes  []string
	values []string
}

func newGen(seed uint64) *gen {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &gen{r: r, base: 1_700_000_000}
	for range 3 {
		var b [32]byte
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		g.hexes = append(g.hexes, fmt.Sprintf("%x", b))
	}
	long := strings.Repeat("long value ", 30) // hashed in keys
	g.values = []string{"", "a", "ab", "abc", "abcdef", "x", "B", long, long + "!", g.hexes[0], g.hexes[1], strings.ToUpper(g.hexes[2]),
		"30000:" + testPubs[0] + ":", "30000:" + testPubs[0] + ":a"}
	return g
}

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

var genKinds = []int{0, 1, 3, 5, 7, 1984, 10002, 30000, 30023, 38000, 65535}
var genTagNames = []string{"t", "d", "e", "p", "a", "T", "client"}

func (g *gen) event() *nostr.Event {
	kind := genKinds[g.r.IntN(len(genKinds))]
	var tags nostr.Tags
	for range g.r.IntN(5) {
		name := g.pick(genTagNames)
		switch g.r.IntN(10) {
		case 0:
			tags = append(tags, nostr.Tag{name}) // no value
		case 1:
			tags = append(tags, nostr.Tag{name, g.pick(g.values), "extra"})
		case 2, 3:
			if len(g.ids) > 0 { // name an event made before (deletions, replies)
				tags = append(tags, nostr.Tag{name, g.pick(g.ids)})
				break
			}
			fallthrough
		default:
			tags = append(tags, nostr.Tag{name, g.pick(g.values)})
		}
	}
	if g.r.IntN(8) == 0 {
		exp := g.base + nostr.Timestamp(g.r.IntN(40))
		tags = append(tags, nostr.Tag{"expiration", strconv.FormatInt(int64(exp), 10)})
	}
	at := g.base + nostr.Timestamp(g.r.IntN(30))
	ev := mkEvent(g.pick(testPubs), kind, at, strconv.Itoa(g.r.IntN(1000)), tags...)
	g.ids = append(g.ids, ev.ID)
	if kind == nostr.KindDeletion {
		for _, t := range tags {
			if len(t) >= 2 && t[0] == "e" {
				g.named = append(g.named, [2]string{t[1], ev.PubKey}, [2]string{t[1], g.pick(testPubs)})
			}
		}
	}
	return ev
}

func (g *gen) filter() nostr.Filter {
	var f nostr.Filter
	if g.r.IntN(6) == 0 && len(g.ids) > 0 {
		for range 1 + g.r.IntN(4) {
			f.IDs = append(f.IDs, g.pick(g.ids))
		}
		if g.r.IntN(4) == 0 {
			f.IDs = append(f.IDs, strings.ToUpper(g.pick(g.ids)), "nothex")
		}
	}
	if g.r.IntN(3) == 0 {
		f.Kinds = []int{}
		for range 1 + g.r.IntN(3) {
			f.Kinds = append(f.Kinds, genKinds[g.r.IntN(len(genKinds))])
		}
		if g.r.IntN(10) == 0 {
			f.Kinds = append(f.Kinds, 70000)
		}
	}
	if g.r.IntN(3) == 0 {
		f.Authors = []string{}
		for range 1 + g.r.IntN(3) {
			f.Authors = append(f.Authors, g.pick(testPubs))
		}
	}
	if g.r.IntN(2) == 0 {
		f.Tags = nostr.TagMap{}
		for range 1 + g.r.IntN(2) {
			name := g.pick(genTagNames[:6]) // one letter: see TestLongTagNamesNeverMatch
			var vals []string
			for range 1 + g.r.IntN(3) {
				vals = append(vals, g.pick(g.values))
			}
			f.Tags[name] = vals
		}
	}
	if g.r.IntN(3) == 0 {
		t := g.base + nostr.Timestamp(g.r.IntN(30))
		f.Since = &t
	}
	if g.r.IntN(3) == 0 {
		t := g.base + nostr.Timestamp(g.r.IntN(30))
		f.Until = &t
	}
	if g.r.IntN(2) == 0 {
		f.Limit = 1 + g.r.IntN(8)
	}
	return f
}

// checkAgainstModel writes n random events (and some deletions) into a fresh
// store and the model, then compares queries and counts: halfway through
// too, so that events read (and cached) before they are deleted or replaced
// must not be served after. Halfway through, old leaves the store as an
// older outpost would have.
func checkAgainstModel(t *testing.T, seed uint64, events, queries int, old modelOld) {
	g := newGen(seed)
	now := g.base + 20
	s := testStore(t, time.Unix(int64(now), 0))
	m := &model{events: map[string]*nostr.Event{}, now: now}
	ctx := context.Background()
	compare := func(queries int) {
		for range queries {
			f := g.filter()
			want := m.query(f)
			if got := queryIDs(t, s, f); !slices.Equal(got, want) {
				t.Fatalf("seed %d, filter %v:\n got %v\nwant %v", seed, f, got, want)
			}
			if matchesNothing(f) && len(want) > 0 {
				t.Fatalf("seed %d, filter %v: matchesNothing, yet it matches %v", seed, f, want)
			}

			filters := []nostr.Filter{f, g.filter(), g.filter()}[:1+g.r.IntN(3)]
			got, err := s.Count(ctx, filters, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := m.count(filters); got != want {
				t.Fatalf("seed %d, count %v: got %d, want %d", seed, filters, got, want)
			}
		}
	}
	// NIP-09 by id, for every id a deletion request named (by its author
	// and by another) and a random one.
	deletions := func() {
		pairs := slices.Clone(g.named)
		if len(g.ids) > 0 {
			pairs = append(pairs, [2]string{g.pick(g.ids), g.pick(testPubs)})
		}
		for _, p := range pairs {
			got, err := s.Deleted(ctx, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			if want := m.deleted(p[0], p[1]); got != want {
				t.Fatalf("seed %d, Deleted(%s, %s) = %v, want %v", seed, p[0], p[1], got, want)
			}
		}
	}
	for i := range events {
		if i == events/2 {
			if old == modelNoKinds {
				stripKinds(t, s.db, 2)
			}
			compare(queries / 2)
			deletions()
		}
		ev := g.event()
		if g.r.IntN(5) == 0 && len(m.events) > 0 { // write the same event again
			for _, old := range m.events {
				ev = old
				break
			}
		}
		mustSave(t, s, ev)
		m.save(ev)
		if i%7 == 0 && len(g.ids) > 0 {
			id := g.pick(g.ids)
			if _, err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			delete(m.events, id)
		}
	}
	compare(queries)
	deletions()
}

// modelOld is what checkAgainstModel does to the store halfway.
type modelOld int

const (
	modelNew     modelOld = iota // nothing
	modelNoKinds                 // clear flagKind from every other index key, as keys written before it have it
)

func TestQueriesMatchTheModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkAgainstModel(t, seed, 150, 150, modelOld(seed%2)) })
	}
}

// go test -fuzz FuzzQueriesMatchTheModel ./internal/storage/events/
func FuzzQueriesMatchTheModel(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 1 << 40} {
		f.Add(binary.BigEndian.AppendUint64(nil, seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var seed [8]byte
		copy(seed[:], b)
		checkAgainstModel(t, binary.BigEndian.Uint64(seed[:]), 60, 60, modelOld(seed[7]%2))
	})
}
