package events

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// The bounds that let a scan leave ranges closed must hold after a restart
// (read from the index), for events saved later with older timestamps, and
// after the newest event of a range is deleted; and a store keeping no
// bounds answers the same.
func TestRangesPastTheirBoundStayClosed(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(context.Background(), testDB(t, dir), quiet())
	if err != nil {
		t.Fatal(err)
	}
	var all []*nostr.Event
	save := func(s *Store, ev *nostr.Event) {
		t.Helper()
		mustSave(t, s, ev)
		all = append(all, ev)
	}
	const t0 = 1_700_000_000
	for i := range 60 {
		save(s, mkEvent(testPubs[i%3], 1+i%2*5, t0+nostr.Timestamp(i*10), "note"))
	}
	s.db.Close()

	db := testDB(t, dir)
	s, err = Open(context.Background(), db, quiet())
	if err != nil {
		t.Fatal(err)
	}
	save(s, mkEvent(testPubs[0], 1, t0-5, "backdated"))         // older than all: the bound stays
	save(s, mkEvent(testPubs[1], 6, t0+10_000, "newer"))        // raises its bound
	save(s, mkEvent(testPubs[2], 7, t0+5, "a kind never seen")) // a new range
	gone := mkEvent(testPubs[2], 6, t0+20_000, "deleted")
	save(s, gone)
	if _, err := s.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	all = slices.DeleteFunc(all, func(ev *nostr.Event) bool { return ev.ID == gone.ID })

	unbounded := &Store{db: db, log: quiet(), now: time.Now} // keeps no bounds: opens every range
	filters := []nostr.Filter{
		{Authors: testPubs[:3], Kinds: []int{1, 6}, Limit: 1},
		{Authors: testPubs[2:3], Kinds: []int{7}},
		{Authors: testPubs[:3], Kinds: []int{1, 6, 7}, Limit: 7},
		{Authors: testPubs[:3], Kinds: []int{1, 6}, Limit: 500},
		{Authors: testPubs[:2], Limit: 3},
		{Authors: testPubs[:3], Kinds: []int{1}, Until: ptr(nostr.Timestamp(t0 + 300)), Limit: 4},
		{Authors: testPubs[:3], Kinds: []int{6}, Since: ptr(nostr.Timestamp(t0 + 400)), Limit: 4},
		{Authors: testPubs[:3], Kinds: []int{1, 6}, Since: ptr(nostr.Timestamp(t0 + 2000))},
		{Authors: testPubs[3:], Kinds: []int{1}, Limit: 5}, // an author with nothing stored
	}
	for _, f := range filters {
		slices.SortFunc(all, func(a, b *nostr.Event) int { return int(b.CreatedAt - a.CreatedAt) })
		var want []string
		for _, ev := range all {
			if f.Matches(ev) && (f.Limit == 0 || len(want) < f.Limit) {
				want = append(want, ev.ID)
			}
		}
		if got := queryIDs(t, s, f); !slices.Equal(got, want) {
			t.Errorf("%v:\n got %v\nwant %v", f, got, want)
		}
		if got := queryIDs(t, unbounded, f); !slices.Equal(got, want) {
			t.Errorf("%v without bounds:\n got %v\nwant %v", f, got, want)
		}
	}
}
