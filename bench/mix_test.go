package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// The mix's data is the same for a seed and a size, signed, in created_at
// order, with every kind the shapes ask for, replaceable events once per
// author, and thread keys that name roots in it.
func TestMixData(t *testing.T) {
	dir := t.TempDir()
	n := 3000
	if testing.Short() {
		n = 1000 // the same plan (50 authors, 49 follows), a third of the signing
	}
	events, keys, err := ensureMix(dir, 5, n)
	if err != nil {
		t.Fatal(err)
	}
	ids := readMixIDs(t, events, keys)
	if len(ids) != n {
		t.Fatalf("%d events, want %d", len(ids), n)
	}
	again := t.TempDir()
	events2, _, err := ensureMix(again, 5, n)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, readMixIDs(t, events2, keys)) {
		t.Error("the same seed made other events")
	}
	if q := newMixDraw(keys, 5, 0); len(q.follows()) != planMix(n).follows {
		t.Errorf("a contact list of %d, want %d", len(q.follows()), planMix(n).follows)
	}
}

func readMixIDs(t *testing.T, path string, keys *mixKeys) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	kinds := map[int]int{}
	replaceable := map[[2]any]bool{}
	roots := map[string]bool{}
	var last nostr.Timestamp
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev nostr.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ok, _ := ev.CheckSignature(); !ok || !ev.CheckID() {
			t.Fatalf("event %d: bad id or signature", len(ids))
		}
		if ev.CreatedAt < last {
			t.Fatalf("event %d is older than the one before", len(ids))
		}
		last = ev.CreatedAt
		if ev.Kind == 0 || ev.Kind == 3 {
			k := [2]any{ev.Kind, ev.PubKey}
			if replaceable[k] {
				t.Fatalf("two kind %d by %s", ev.Kind, ev.PubKey)
			}
			replaceable[k] = true
		}
		if ev.Kind == 1 && ev.Tags.Find("e") == nil {
			roots[ev.ID] = true
		}
		kinds[ev.Kind]++
		ids = append(ids, ev.ID)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	p := planMix(len(ids))
	if kinds[0] != p.authors || kinds[3] != p.active || kinds[1] == 0 || kinds[6] == 0 || kinds[7] == 0 {
		t.Errorf("kinds %v", kinds)
	}
	for _, root := range keys.Threads {
		if !roots[root] {
			t.Fatalf("thread key %s is not a root note", root)
		}
	}
	return ids
}

func TestMismatches(t *testing.T) {
	a := []loadResult{{Counts: []int{5, 3, 500}}}
	c := []loadResult{{Counts: []int{5, 4, 499}}}
	if n, first := mismatches(a, c); n != 2 || first != "REQ 1: 3 vs 4" {
		t.Errorf("%d %q", n, first)
	}
}

// Each filter of the other shapes is valid, and most find events in the
// data they were drawn from.
func TestMoreShapes(t *testing.T) {
	const n = 3000
	events, keys, err := ensureMix(t.TempDir(), 5, n)
	if err != nil {
		t.Fatal(err)
	}
	sample, err := sampleMix(events, n, 5)
	if err != nil {
		t.Fatal(err)
	}
	files, err := writeMixFilters(keys, sample, 5, 0, 20, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(mixShapes)+len(moreShapes) {
		t.Fatalf("%d files, want %d", len(files), len(mixShapes)+len(moreShapes))
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*nostr.Event
	for line := range bytes.Lines(b) {
		ev := &nostr.Event{}
		if err := json.Unmarshal(line, ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	for _, shape := range moreShapes {
		b, err := os.ReadFile(files[shape.name])
		if err != nil {
			t.Fatal(err)
		}
		lines, found := 0, 0
		for line := range bytes.Lines(b) {
			var f nostr.Filter
			if err := json.Unmarshal(line, &f); err != nil {
				t.Fatalf("%s: %v", shape.name, err)
			}
			lines++
			if slices.ContainsFunc(evs, f.Matches) {
				found++
			}
		}
		if lines != 20 || found < lines*4/5 {
			t.Errorf("%s: %d of %d filters find events", shape.name, found, lines)
		}
	}
}
