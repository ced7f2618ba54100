package events

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func mustDeleted(t *testing.T, s *Store, ev *nostr.Event) bool {
	t.Helper()
	deleted, err := s.Deleted(context.Background(), ev.ID, ev.PubKey)
	if err != nil {
		t.Fatal(err)
	}
	return deleted
}

// NIP-09 by id: an event is deleted while a live deletion request (kind 5)
// of its own author names it in an e tag, and for as long as one does.
func TestDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testStore(t, t0)
	author, stranger := testPubs[0], testPubs[1]
	note := mkEvent(author, 1, 100, "regret")
	other := mkEvent(author, 1, 100, "keep")
	if mustDeleted(t, s, note) {
		t.Fatal("deleted before any deletion request")
	}

	// A stranger's request does not count, nor one naming the id in another
	// tag or spelling, nor a request of another kind.
	mustSave(t, s, mkEvent(stranger, 5, 110, "", nostr.Tag{"e", note.ID}))
	mustSave(t, s, mkEvent(author, 5, 110, "", nostr.Tag{"p", note.ID}, nostr.Tag{"e", strconv.Quote(note.ID)}, nostr.Tag{"E", note.ID}))
	mustSave(t, s, mkEvent(author, 1, 110, "", nostr.Tag{"e", note.ID}))
	if mustDeleted(t, s, note) {
		t.Fatal("deleted by a stranger's request, another tag or another kind")
	}
	if mustDeleted(t, s, &nostr.Event{ID: note.ID, PubKey: stranger}) != true {
		t.Fatal("the stranger's request does not delete the stranger's own event of that id")
	}

	// Two requests (one naming the note twice), removed one after the other.
	first := mkEvent(author, 5, 120, "", nostr.Tag{"e", note.ID}, nostr.Tag{"e", note.ID}, nostr.Tag{"e", other.ID})
	second := mkEvent(author, 5, 121, "again", nostr.Tag{"e", note.ID})
	mustSave(t, s, first)
	mustSave(t, s, second)
	mustSave(t, s, first) // a duplicate writes nothing twice
	if !mustDeleted(t, s, note) || !mustDeleted(t, s, other) {
		t.Fatal("not deleted after two requests")
	}
	if _, err := s.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if !mustDeleted(t, s, note) {
		t.Fatal("no longer deleted while the second request is stored")
	}
	if mustDeleted(t, s, other) {
		t.Fatal("still deleted after the only request naming it was removed")
	}
	if _, err := s.Delete(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if mustDeleted(t, s, note) {
		t.Fatal("still deleted after both requests were removed")
	}

	// Malformed ids and pubkeys are never deleted.
	for _, bad := range [][2]string{{"", author}, {note.ID, ""}, {"x" + note.ID[1:], author}} {
		if d, err := s.Deleted(ctx, bad[0], bad[1]); d || err != nil {
			t.Fatalf("Deleted(%q, %q) = %v, %v", bad[0], bad[1], d, err)
		}
	}
}

// A deletion request that expires (NIP-40) stops counting at its
// expiration, before the sweep removes it, and leaves no tombstone after.
func TestDeletedExpires(t *testing.T) {
	t.Parallel()
	now := t0
	s := testStore(t, now)
	note := mkEvent(testPubs[0], 1, 100, "regret")
	at := strconv.FormatInt(now.Add(time.Minute).Unix(), 10)
	mustSave(t, s, mkEvent(testPubs[0], 5, 110, "", nostr.Tag{"e", note.ID}, nostr.Tag{"expiration", at}))
	if !mustDeleted(t, s, note) {
		t.Fatal("not deleted before the request expires")
	}
	s.now = func() time.Time { return now.Add(time.Minute) }
	if mustDeleted(t, s, note) {
		t.Fatal("still deleted once the request expired")
	}
	if n, err := s.DeleteExpired(context.Background(), nostr.Timestamp(now.Add(time.Minute).Unix())); n != 1 || err != nil {
		t.Fatalf("DeleteExpired: %d %v", n, err)
	}
	if n := keyCount(t, s); n != 0 {
		t.Fatalf("%d keys left after the request was swept", n)
	}
}

// Requests saved at once, naming one event, each add their tombstone
// (their transactions conflict and are retried).
func TestConcurrentDeletions(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	note := mkEvent(testPubs[0], 1, 100, "regret")
	var dels []*nostr.Event
	for i := range 16 {
		dels = append(dels, mkEvent(testPubs[0], 5, nostr.Timestamp(110+i), "", nostr.Tag{"e", note.ID}))
	}
	done := make(chan error)
	for _, d := range dels {
		go func() { _, err := s.Save(context.Background(), d); done <- err }()
	}
	for range dels {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range dels {
		if !mustDeleted(t, s, note) {
			t.Fatalf("not deleted with %d of %d requests left", len(dels)-i, len(dels))
		}
		if _, err := s.Delete(context.Background(), d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if mustDeleted(t, s, note) {
		t.Fatal("deleted after every request was removed")
	}
}

// matchesNothing is the planner's verdict that Query yields nothing for f
// whatever the store holds: "limit":0, a search, a condition on a tag name
// longer than one letter, or lists none of whose values can match. (The
// relay decides this for itself before it asks the store; the planner's own
// verdict is tested here.)
func matchesNothing(f nostr.Filter) bool { return f.LimitZero || newPlan(f).none }

// matchesNothing is exactly when Query yields nothing whatever is stored;
// the first two filters are those khatru v0.19.1's AddEvent queries for
// every event it adds (tag names "#e" and "#a", which are never indexed).
func TestMatchesNothing(t *testing.T) {
	t.Parallel()
	s := testStore(t, t0)
	note := mkEvent(testPubs[0], 1, 100, "regret")
	mustSave(t, s, note)
	mustSave(t, s, mkEvent(testPubs[0], 5, 110, "", nostr.Tag{"e", note.ID}, nostr.Tag{"#e", note.ID}))
	since := nostr.Timestamp(0)
	nothing := []nostr.Filter{
		{Kinds: []int{5}, Tags: nostr.TagMap{"#e": {note.ID}}},
		{Kinds: []int{5}, Since: &since, Tags: nostr.TagMap{"#a": {"30000:" + testPubs[0] + ":x"}}},
		{LimitZero: true},
		{Search: "regret"},
		{IDs: []string{"nothex"}},
		{Kinds: []int{70000}},
		{Tags: nostr.TagMap{"e": {}}},
	}
	for _, f := range nothing {
		if !matchesNothing(f) {
			t.Errorf("matchesNothing(%v) is false", f)
		}
		if got := queryIDs(t, s, f); len(got) != 0 {
			t.Errorf("%v matches %v", f, got)
		}
	}
	for _, f := range []nostr.Filter{{}, {Kinds: []int{5}, Tags: nostr.TagMap{"e": {note.ID}}}, {Tags: nostr.TagMap{"e": nil}}} {
		if matchesNothing(f) {
			t.Errorf("matchesNothing(%v) is true", f)
		}
	}
}
