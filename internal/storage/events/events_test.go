package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/testkit"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestReplacement(t *testing.T) {
	t.Parallel()
	pk := testPubs[0]
	tests := []struct {
		name       string
		first      *nostr.Event
		second     *nostr.Event
		want       Outcome
		secondWins bool
	}{
		{"newer replaces", mkEvent(pk, 0, 100, "a"), mkEvent(pk, 0, 101, "b"), Stored, true},
		{"older is refused", mkEvent(pk, 0, 101, "a"), mkEvent(pk, 0, 100, "b"), Superseded, false},
		{"same event", mkEvent(pk, 0, 100, "a"), mkEvent(pk, 0, 100, "a"), Duplicate, false},
		{"other author", mkEvent(pk, 10002, 100, "a"), mkEvent(testPubs[1], 10002, 90, "b"), Stored, true},
		{"replaceable ignores d", mkEvent(pk, 3, 100, "a", nostr.Tag{"d", "x"}), mkEvent(pk, 3, 101, "b", nostr.Tag{"d", "y"}), Stored, true},
		{"addressable d=x vs d=xy", mkEvent(pk, 30000, 100, "a", nostr.Tag{"d", "xy"}), mkEvent(pk, 30000, 101, "b", nostr.Tag{"d", "x"}), Stored, true},
		{"missing d is d=\"\"", mkEvent(pk, 30000, 100, "a"), mkEvent(pk, 30000, 101, "b", nostr.Tag{"d", ""}), Stored, true},
		{"d=\"\" is missing d", mkEvent(pk, 30000, 101, "a", nostr.Tag{"d", ""}), mkEvent(pk, 30000, 100, "b"), Superseded, false},
		{"first d tag is the address", mkEvent(pk, 30000, 100, "a", nostr.Tag{"d"}, nostr.Tag{"d", "x"}, nostr.Tag{"d", "y"}), mkEvent(pk, 30000, 101, "b", nostr.Tag{"d", "x"}), Stored, true},
		{"other kind", mkEvent(pk, 30000, 100, "a", nostr.Tag{"d", "x"}), mkEvent(pk, 30001, 90, "b", nostr.Tag{"d", "x"}), Stored, true},
		{"long d values", mkEvent(pk, 30000, 100, "a", nostr.Tag{"d", strings.Repeat("d", 300)}), mkEvent(pk, 30000, 99, "b", nostr.Tag{"d", strings.Repeat("d", 300) + "!"}), Stored, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t, t0)
			mustSave(t, s, tt.first)
			if got := mustSave(t, s, tt.second); got != tt.want {
				t.Fatalf("second save: %v, want %v", got, tt.want)
			}
			got := queryIDs(t, s, nostr.Filter{})
			replaced := tt.second.Kind == tt.first.Kind && tt.second.PubKey == tt.first.PubKey &&
				address(tt.first.Kind, tt.first.Tags) == address(tt.second.Kind, tt.second.Tags)
			var want []string
			switch {
			case tt.want == Duplicate || !tt.secondWins:
				want = []string{tt.first.ID}
			case replaced:
				want = []string{tt.second.ID}
			default:
				want = []string{tt.second.ID, tt.first.ID}
				if tt.second.CreatedAt < tt.first.CreatedAt {
					want = []string{tt.first.ID, tt.second.ID}
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("stored %v, want %v", got, want)
			}
		})
	}
}

// NIP-01: of two versions at the same second, the lowest id stays.
func TestReplacementTieKeepsLowestID(t *testing.T) {
	t.Parallel()
	pk := testPubs[0]
	a, b := mkEvent(pk, 10000, 100, "a"), mkEvent(pk, 10000, 100, "b")
	low, high := a, b
	if high.ID < low.ID {
		low, high = high, low
	}
	for _, order := range [][]*nostr.Event{{low, high}, {high, low}} {
		s := testStore(t, t0)
		mustSave(t, s, order[0])
		mustSave(t, s, order[1])
		if got := queryIDs(t, s, nostr.Filter{}); !slices.Equal(got, []string{low.ID}) {
			t.Fatalf("saved %s then %s: kept %v, want the lowest id", order[0].ID[:8], order[1].ID[:8], got)
		}
	}
}

// Many writers racing on one address leave exactly its newest version, and
// nothing else of it.
func TestConcurrentReplacement(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), testDB(t, t.TempDir()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	pk := testPubs[0]
	var versions []*nostr.Event
	for i := range 200 {
		versions = append(versions, mkEvent(pk, 30000, nostr.Timestamp(1000+i%50), strconv.Itoa(i), nostr.Tag{"d", "list"}, nostr.Tag{"t", "x"}))
	}
	best := versions[0]
	for _, v := range versions {
		if newer(v.CreatedAt, mustID(v), best.CreatedAt, mustID(best)) {
			best = v
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(versions); i += 8 {
				if _, err := s.Save(context.Background(), versions[(i*37)%len(versions)]); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, f := range []nostr.Filter{{}, {Kinds: []int{30000}}, {Authors: []string{pk}}, {Tags: nostr.TagMap{"t": {"x"}}}, {Tags: nostr.TagMap{"d": {"list"}}}} {
		if got := queryIDs(t, s, f); !slices.Equal(got, []string{best.ID}) {
			t.Fatalf("%v: %d events, want only the newest", f, len(got))
		}
	}
	if got, _ := s.Address(context.Background(), 30000, pk, "list"); got == nil || got.ID != best.ID {
		t.Fatalf("the address holds %v, want %s", got, best.ID)
	}
}

func mustID(ev *nostr.Event) []byte {
	var id [32]byte
	parseHex32(ev.ID, &id)
	return id[:]
}

// mustTail is the ts and id that end ev's keys.
func mustTail(ev *nostr.Event) []byte {
	return append(encodeTS(nil, ev.CreatedAt), mustID(ev)...)
}

func TestInvalidEventsAreRefused(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	good := mkEvent(testPubs[0], 1, 100, "a")
	upper := *good
	upper.PubKey = strings.ToUpper(good.PubKey)
	upper.ID = upper.GetID()
	wrongID := *good
	wrongID.Content = "b"
	bigKind := mkEvent(testPubs[0], 70000, 100, "a")
	for name, ev := range map[string]*nostr.Event{"upper-case pubkey": &upper, "wrong id": &wrongID, "kind 70000": bigKind, "no id": {PubKey: good.PubKey}} {
		if _, err := s.Save(context.Background(), ev); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrBadID) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := queryIDs(t, s, nostr.Filter{}); len(got) != 0 {
		t.Fatalf("invalid events stored: %v", got)
	}
}

// The JSON handed to readers is go-nostr's own serialisation of the event.
func TestRawIsCanonicalJSON(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	ev := mkEvent(testPubs[0], 1, 100, "quote \" and <html> & \u2028", nostr.Tag{"t", "ünïcode"})
	ev.Sig = strings.Repeat("ab", 64)
	mustSave(t, s, ev)
	want, _ := ev.MarshalJSON()
	s.Query(context.Background(), nostr.Filter{}, nil, func(m Meta, raw []byte) bool {
		if string(raw) != string(want) {
			t.Errorf("raw %s, want %s", raw, want)
		}
		if m.IDHex() != ev.ID || m.PubKeyHex() != ev.PubKey || m.Kind != 1 || m.CreatedAt != 100 || m.Expiration != 0 {
			t.Errorf("meta %+v", m)
		}
		return true
	})
}

func TestTagValues(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	long := strings.Repeat("v", 400)
	hexv := strings.Repeat("0f", 32)
	evs := map[string]*nostr.Event{
		"abc":    mkEvent(testPubs[0], 1, 100, "1", nostr.Tag{"t", "abc"}),
		"abcdef": mkEvent(testPubs[0], 1, 101, "2", nostr.Tag{"t", "abcdef"}),
		"empty":  mkEvent(testPubs[0], 1, 102, "3", nostr.Tag{"t", ""}),
		"long":   mkEvent(testPubs[0], 1, 103, "4", nostr.Tag{"t", long}),
		"long!":  mkEvent(testPubs[0], 1, 104, "5", nostr.Tag{"t", long + "!"}),
		"hex":    mkEvent(testPubs[0], 1, 105, "6", nostr.Tag{"e", hexv}),
		"HEX":    mkEvent(testPubs[0], 1, 106, "7", nostr.Tag{"e", strings.ToUpper(hexv)}),
		"multi":  mkEvent(testPubs[0], 1, 107, "8", nostr.Tag{"client", "x"}, nostr.Tag{"t", "x"}),
	}
	for _, ev := range evs {
		mustSave(t, s, ev)
	}
	tests := []struct {
		f    nostr.Filter
		want []string
	}{
		{nostr.Filter{Tags: nostr.TagMap{"t": {"abc"}}}, []string{"abc"}},
		{nostr.Filter{Tags: nostr.TagMap{"t": {"ab"}}}, nil},
		{nostr.Filter{Tags: nostr.TagMap{"t": {""}}}, []string{"empty"}},
		{nostr.Filter{Tags: nostr.TagMap{"t": {long}}}, []string{"long"}},
		{nostr.Filter{Tags: nostr.TagMap{"t": {long[:399]}}}, nil},
		{nostr.Filter{Tags: nostr.TagMap{"t": {long, "abc", long + "!"}}}, []string{"long!", "long", "abc"}},
		{nostr.Filter{Tags: nostr.TagMap{"e": {hexv}}}, []string{"hex"}},
		{nostr.Filter{Tags: nostr.TagMap{"e": {strings.ToUpper(hexv)}}}, []string{"HEX"}},
		{nostr.Filter{Tags: nostr.TagMap{"t": {"x"}, "client": {"x"}}}, nil}, // tag names longer than one letter are not indexed
		{nostr.Filter{Tags: nostr.TagMap{"t": {}}}, nil},                     // an empty list matches nothing, as in Filter.Matches
		{nostr.Filter{Tags: nostr.TagMap{"t": nil}, Limit: 1}, []string{"multi"}},
	}
	for _, tt := range tests {
		var want []string
		for _, name := range tt.want {
			want = append(want, evs[name].ID)
		}
		if got := queryIDs(t, s, tt.f); !slices.Equal(got, want) {
			t.Errorf("%v: got %v, want %v", tt.f, got, tt.want)
		}
	}
}

func TestExpiration(t *testing.T) {
	t.Parallel()
	now := t0
	s := testStore(t, now)
	ctx := context.Background()
	exp := func(d time.Duration) nostr.Tag {
		return nostr.Tag{"expiration", strconv.FormatInt(now.Add(d).Unix(), 10)}
	}
	live := mkEvent(testPubs[0], 1, 100, "live")
	later := mkEvent(testPubs[0], 1, 101, "expires later", exp(time.Hour))
	var expired []*nostr.Event
	for i := range 5 {
		ev := mkEvent(testPubs[0], 1, nostr.Timestamp(200+i), "gone", exp(-time.Duration(i)*time.Second))
		expired = append(expired, ev)
		mustSave(t, s, ev)
	}
	mustSave(t, s, live)
	mustSave(t, s, later)
	// The expired events are the newest, yet a limit of 2 finds the two live ones.
	if got := queryIDs(t, s, nostr.Filter{Limit: 2}); !slices.Equal(got, []string{later.ID, live.ID}) {
		t.Fatalf("limit 2: %v", got)
	}
	if got := queryIDs(t, s, nostr.Filter{IDs: []string{expired[0].ID}}); len(got) != 0 {
		t.Fatalf("an expired event by id: %v", got)
	}
	if n, _ := s.Count(ctx, []nostr.Filter{{}}, nil); n != 2 {
		t.Fatalf("count: %d, want 2", n)
	}
	n := 0
	for _, err := range s.Find(ctx, nostr.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("Find: %d events, want 2", n)
	}
	if got, err := s.DeleteExpired(ctx, nostr.Timestamp(now.Unix())); err != nil || got != 5 {
		t.Fatalf("DeleteExpired: %d %v, want 5", got, err)
	}
	// The event expiring later is served until then.
	s.now = func() time.Time { return now.Add(time.Hour) }
	if got := queryIDs(t, s, nostr.Filter{}); !slices.Equal(got, []string{live.ID}) {
		t.Fatalf("an hour later: %v", got)
	}
	if got, _ := s.DeleteExpired(ctx, nostr.Timestamp(now.Unix())); got != 0 {
		t.Fatalf("a second sweep deleted %d", got)
	}
	if got, _ := s.DeleteExpired(ctx, nostr.Timestamp(now.Add(time.Hour).Unix())); got != 1 {
		t.Fatalf("the sweep an hour later deleted %d, want 1", got)
	}
	if keys := keyCount(t, s); keys != 5 { // live: event + 4 indexes
		t.Fatalf("%d keys left, want the live event's 5", keys)
	}
}

// keyCount counts the keys in the store but the format key.
func keyCount(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	s.db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if it.Item().Key()[0] != prefixFormat {
				n++
			}
		}
		return nil
	})
	return n
}

// Deleting every event leaves no key behind: the keys removed are exactly
// those written.
func TestDeleteLeavesNoKeys(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	g := newGen(7)
	for range 300 {
		mustSave(t, s, g.event())
	}
	for _, id := range g.ids {
		if _, err := s.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if n := keyCount(t, s); n != 0 {
		t.Fatalf("%d keys left after deleting every event", n)
	}
}

func TestQuerySkipLimitAndStop(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	var ids []string
	for i := range 10 {
		ev := mkEvent(testPubs[i%2], 1, nostr.Timestamp(100+i), "n")
		mustSave(t, s, ev)
		ids = append([]string{ev.ID}, ids...) // newest first
	}
	ctx := context.Background()
	skipOdd := func(m Meta) bool { return m.PubKeyHex() == testPubs[1] }
	var got []string
	s.Query(ctx, nostr.Filter{Limit: 3}, skipOdd, func(m Meta, _ []byte) bool { got = append(got, m.IDHex()); return true })
	if want := []string{ids[1], ids[3], ids[5]}; !slices.Equal(got, want) {
		t.Fatalf("skip: %v, want %v", got, want)
	}
	got = nil
	s.Query(ctx, nostr.Filter{}, nil, func(m Meta, _ []byte) bool { got = append(got, m.IDHex()); return len(got) < 4 })
	if len(got) != 4 {
		t.Fatalf("yield returned false after 4: %d events", len(got))
	}
	if n := len(queryIDs(t, s, nostr.Filter{LimitZero: true})); n != 0 {
		t.Fatalf("limit 0: %d events", n)
	}
	if n := len(queryIDs(t, s, nostr.Filter{Search: "n"})); n != 0 {
		t.Fatalf("search: %d events", n)
	}
	if n, _ := s.Count(ctx, []nostr.Filter{{}}, skipOdd); n != 5 {
		t.Fatalf("count with skip: %d, want 5", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Query(cctx, nostr.Filter{}, nil, func(Meta, []byte) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled query: %v", err)
	}
}

// COUNT with several filters counts each matching event once (NIP-45).
func TestCountUnion(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	for i := range 6 {
		mustSave(t, s, mkEvent(testPubs[0], 1+i%2, nostr.Timestamp(100+i), "n", nostr.Tag{"t", fmt.Sprint(i % 3)}))
	}
	filters := []nostr.Filter{{Kinds: []int{1}}, {Tags: nostr.TagMap{"t": {"0", "1"}}}, {Authors: []string{testPubs[0]}, Kinds: []int{1}}}
	if n, _ := s.Count(context.Background(), filters, nil); n != 5 {
		t.Fatalf("count of the union: %d, want 5", n)
	}
	if n, _ := s.Count(context.Background(), filters[1:2], nil); n != 4 {
		t.Fatalf("count of one: %d, want 4", n)
	}
}

func TestAddress(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	ctx := context.Background()
	pk := testPubs[0]
	noD := mkEvent(pk, 30000, 100, "no d")
	x := mkEvent(pk, 30000, 100, "x", nostr.Tag{"d", "x"})
	meta := mkEvent(pk, 0, 100, "{}", nostr.Tag{"d", "ignored"})
	for _, ev := range []*nostr.Event{noD, x, meta} {
		mustSave(t, s, ev)
	}
	tests := []struct {
		kind int
		d    string
		want *nostr.Event
	}{
		{30000, "", noD}, {30000, "x", x}, {30000, "xy", nil}, {30001, "x", nil}, {0, "", meta}, {0, "anything", meta}, {1, "", nil},
	}
	for _, tt := range tests {
		got, err := s.Address(ctx, tt.kind, pk, tt.d)
		if err != nil || (got == nil) != (tt.want == nil) || got != nil && got.ID != tt.want.ID {
			t.Errorf("Address(%d, %q): %v %v, want %v", tt.kind, tt.d, got, err, tt.want)
		}
	}
}

// A filter with more (author, kind) pairs than maxAuthorKindScans scans by
// author and checks the kind.
func TestManyAuthorsAndKinds(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	m := &model{events: map[string]*nostr.Event{}, now: nostr.Timestamp(t0.Unix())}
	var authors []string
	for i := range 200 {
		pk := fmt.Sprintf("%064x", i+1)
		authors = append(authors, pk)
		for j, kind := range []int{1, 7, 1984} {
			ev := mkEvent(pk, kind, nostr.Timestamp(100+i+j), "n")
			mustSave(t, s, ev)
			m.save(ev)
		}
	}
	f := nostr.Filter{Authors: authors, Kinds: []int{1, 7, 2, 4, 5, 8}} // 1,200 pairs
	if p := newPlan(f); len(p.scans) != 200 || p.covered {
		t.Fatalf("plan: %d scans, covered %v; want one per author, not covering", len(p.scans), p.covered)
	}
	if got, want := queryIDs(t, s, f), m.query(f); !slices.Equal(got, want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	if got, _ := s.Count(context.Background(), []nostr.Filter{f}, nil); got != 400 {
		t.Fatalf("count: %d, want 400", got)
	}
}

// Filters naming hundreds of ids or addresses (the profiles of a home
// feed) get the model's answer, newest first, with the events named but
// deleted, replaced or never stored left out.
func TestManyLookUps(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	m := &model{events: map[string]*nostr.Event{}, now: nostr.Timestamp(t0.Unix())}
	var authors, ids []string
	for i := range 300 {
		pk := fmt.Sprintf("%064x", i+1)
		authors = append(authors, pk)
		if i%10 == 9 {
			continue // no profile
		}
		for j := range 1 + i%3 { // replaced once or twice
			ev := mkEvent(pk, 0, nostr.Timestamp(100+(i*7)%50+j), fmt.Sprint("profile ", i, j))
			mustSave(t, s, ev)
			m.save(ev)
		}
		note := mkEvent(pk, 1, nostr.Timestamp(200+i%40), fmt.Sprint("note ", i))
		mustSave(t, s, note)
		m.save(note)
		ids = append(ids, note.ID, fmt.Sprintf("%064x", 1<<20+i)) // and one never stored
	}
	for _, id := range ids[:40] {
		if deleted, err := s.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		} else if deleted {
			delete(m.events, id)
		}
	}
	for _, f := range []nostr.Filter{
		{Kinds: []int{0}, Authors: authors},
		{Kinds: []int{0}, Authors: authors, Limit: 50},
		{IDs: ids},
		{IDs: ids, Limit: 10},
	} {
		if got, want := queryIDs(t, s, f), m.query(f); !slices.Equal(got, want) {
			t.Fatalf("%d ids, %d authors, limit %d: got %d events, want %d", len(f.IDs), len(f.Authors), f.Limit, len(got), len(want))
		}
		if got, _ := s.Count(context.Background(), []nostr.Filter{f}, nil); got != m.count([]nostr.Filter{f}) {
			t.Fatalf("count: %d, want %d", got, m.count([]nostr.Filter{f}))
		}
	}
}

func TestSweepExpired(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	mustSave(t, s, mkEvent(testPubs[0], 1, 100, "gone", nostr.Tag{"expiration", strconv.FormatInt(t0.Unix(), 10)}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { s.SweepExpired(ctx, time.Hour); close(done) }()
	testkit.WaitFor(t, 10*time.Second, "the sweep to delete the expired event", func() bool { return keyCount(t, s) == 0 })
	cancel()
	<-done
}

// An address key left pointing at no event (data damaged outside the store)
// does not block the address forever.
func TestDanglingAddressIsTaken(t *testing.T) {
	t.Parallel()
	for _, size := range []int{tailLen, 32} { // no such event; not even a ts and id
		s := testStore(t, t0)
		ev := mkEvent(testPubs[0], 30000, 100, "a", nostr.Tag{"d", "x"})
		ak := addressKey(30000, mustID(&nostr.Event{ID: ev.PubKey}), "x")
		if err := s.db.Update(func(txn *kv.Txn) error { return txn.Set(ak, make([]byte, size)) }); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Address(context.Background(), 30000, ev.PubKey, "x"); got != nil || err != nil {
			t.Fatalf("a dangling address of %d bytes holds %v, %v", size, got, err)
		}
		if out := mustSave(t, s, ev); out != Stored {
			t.Fatalf("save: %v", out)
		}
		if got, _ := s.Address(context.Background(), 30000, ev.PubKey, "x"); got == nil || got.ID != ev.ID {
			t.Fatalf("the address holds %v", got)
		}
	}
}

// A filter of authors and replaceable kinds reads the events its address
// keys name from the cache when it can; an event replaced or deleted after
// it was cached must not come back from there.
func TestAddressedReadsServeNoGoneEvent(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	pk := testPubs[0]
	f := nostr.Filter{Authors: []string{pk}, Kinds: []int{0, 3}}
	a := mkEvent(pk, 0, 100, "a")
	mustSave(t, s, a)
	if got := queryIDs(t, s, f); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("first read %v, want %v", got, []string{a.ID})
	}
	b := mkEvent(pk, 0, 101, "b")
	mustSave(t, s, b)
	if got := queryIDs(t, s, f); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("after the replacement %v, want %v", got, []string{b.ID})
	}
	if deleted, err := s.Delete(context.Background(), b.ID); err != nil || !deleted {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	if got := queryIDs(t, s, f); len(got) != 0 {
		t.Fatalf("after the deletion %v, want none", got)
	}
}
