package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// TestSaveBatchAsOneByOne: a batch stores what saving its events one by
// one would, with the same outcomes: a repeated event is a duplicate, an
// older version of an address after a newer one is superseded, a newer one
// replaces it, and an invalid event is refused without the others.
func TestSaveBatchAsOneByOne(t *testing.T) {
	pk := strings.Repeat("ab", 32)
	note := mkEvent(pk, 1, 100, "note")
	v1 := mkEvent(pk, 0, 100, "profile v1")
	v2 := mkEvent(pk, 0, 200, "profile v2")
	a3 := mkEvent(pk, 30023, 300, "article v3", nostr.Tag{"d", "x"})
	a2 := mkEvent(pk, 30023, 200, "article v2", nostr.Tag{"d", "x"})
	bad := mkEvent(pk, 1, 100, "bad id")
	bad.Content = "changed"
	batch := []*nostr.Event{note, v1, note, v2, bad, a3, a2}
	want := []Outcome{Stored, Stored, Duplicate, Stored, 0, Stored, Superseded}

	s := testStore(t, time.Unix(1000, 0))
	out, errs, err := s.SaveBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		if i == 4 {
			if !errors.Is(errs[i], ErrBadID) {
				t.Errorf("the event with a wrong id: %v", errs[i])
			}
			continue
		}
		if errs[i] != nil || out[i] != want[i] {
			t.Errorf("event %d: %v, %v; want %v", i, out[i], errs[i], want[i])
		}
	}
	got := queryIDs(t, s, nostr.Filter{Authors: []string{pk}})
	if wantIDs := []string{a3.ID, v2.ID, note.ID}; !slices.Equal(got, wantIDs) {
		t.Errorf("stored %v, want %v", got, wantIDs)
	}
	// Again: every one is held already.
	out, _, err = s.SaveBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Outcome{Duplicate, Superseded, Duplicate, Duplicate, 0, Duplicate, Superseded}; !slices.Equal(out, want) {
		t.Errorf("again: %v, want %v", out, want)
	}
}

// TestSaveBatchTooBigForOneTransaction: a batch bigger than badger commits
// at once is written in parts, all of it.
func TestSaveBatchTooBigForOneTransaction(t *testing.T) {
	s, err := Open(context.Background(), testDB(t, t.TempDir()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	pk := strings.Repeat("cd", 32)
	big := strings.Repeat("x", 4<<10)
	var batch []*nostr.Event
	for i := range 8000 {
		batch = append(batch, mkEvent(pk, 1, nostr.Timestamp(i+1), fmt.Sprint(i, big)))
	}
	out, errs, err := s.SaveBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		if errs[i] != nil || out[i] != Stored {
			t.Fatalf("event %d: %v, %v", i, out[i], errs[i])
		}
	}
	n, err := s.Count(context.Background(), []nostr.Filter{{Authors: []string{pk}}}, nil)
	if err != nil || n != int64(len(batch)) {
		t.Fatalf("%d stored (%v), want %d", n, err, len(batch))
	}
}
