package events

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// Find yields the events Query finds, decoded, in its order and within its
// limit; breaking out of the loop ends the read; a failure comes last.
func TestFind(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), testDB(t, t.TempDir()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		ev := mkEvent(testPubs[0], 1, nostr.Timestamp(100+i), "note", nostr.Tag{"t", "x"})
		mustSave(t, s, ev)
		want = append([]string{ev.ID}, want...)
	}
	mustSave(t, s, mkEvent(testPubs[1], 1, 200, "another's"))
	find := func(ctx context.Context, f nostr.Filter, stopAfter int) (ids []string, err error) {
		for ev, err := range s.Find(ctx, f) {
			if err != nil {
				return ids, err
			}
			if ev.Content != "note" || ev.Tags.Find("t") == nil {
				t.Fatalf("not decoded whole: %v", ev)
			}
			if ids = append(ids, ev.ID); len(ids) == stopAfter {
				break
			}
		}
		return ids, nil
	}
	f := nostr.Filter{Authors: []string{testPubs[0]}}
	if got, err := find(context.Background(), f, 0); err != nil || !slices.Equal(got, want) {
		t.Fatalf("all: %v %v, want %v", got, err, want)
	}
	f.Limit = 2
	if got, err := find(context.Background(), f, 0); err != nil || !slices.Equal(got, want[:2]) {
		t.Fatalf("limit 2: %v %v", got, err)
	}
	f.Limit = 0
	if got, err := find(context.Background(), f, 3); err != nil || !slices.Equal(got, want[:3]) {
		t.Fatalf("break after 3: %v %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := find(ctx, f, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("ended context: %v, want its error", err)
	}
}
