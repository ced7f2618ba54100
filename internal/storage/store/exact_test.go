package store

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
)

// The cases of issue 9 §1 at the store level: every query result matches the
// whole filter, and replacing an event touches only its exact address. The
// events go in as the relay stores them (Save, which replaces the exact
// address of replaceable and addressable kinds).

type exactEnv struct {
	t  *testing.T
	s  *Store
	sk string
	at nostr.Timestamp
}

func newExactEnv(t *testing.T) *exactEnv {
	s, err := Open(t.TempDir(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &exactEnv{t: t, s: s, sk: nostr.GeneratePrivateKey(), at: 1_700_000_000}
}

// put signs and stores an event one second after the previous one.
func (e *exactEnv) put(kind int, tags ...nostr.Tag) nostr.Event {
	e.t.Helper()
	e.at++
	ev := nostr.Event{Kind: kind, CreatedAt: e.at, Tags: tags, Content: "x"}
	if err := ev.Sign(e.sk); err != nil {
		e.t.Fatal(err)
	}
	if out, err := e.s.Events.Save(context.Background(), &ev); err != nil || out != events.Stored {
		e.t.Fatalf("store kind %d %v: %v %v", kind, tags, out, err)
	}
	return ev
}

func (e *exactEnv) ids(f nostr.Filter) []string {
	e.t.Helper()
	var out []string
	for ev, err := range e.s.Events.Find(context.Background(), f) {
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev.ID)
	}
	slices.Sort(out)
	return out
}

func (e *exactEnv) want(f nostr.Filter, evs ...nostr.Event) {
	e.t.Helper()
	var want []string
	for _, ev := range evs {
		want = append(want, ev.ID)
	}
	slices.Sort(want)
	if got := e.ids(f); !slices.Equal(got, want) {
		e.t.Errorf("%v: got %d events %v, want %d %v", f, len(got), got, len(want), want)
	}
}

func TestTagValuesMatchExactly(t *testing.T) {
	t.Parallel()
	e := newExactEnv(t)
	abc := e.put(1, nostr.Tag{"t", "abc"})
	abcdef := e.put(1, nostr.Tag{"t", "abcdef"})
	e.want(nostr.Filter{Tags: nostr.TagMap{"t": {"abc"}}}, abc)
	e.want(nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"abc"}}}, abc)
	e.want(nostr.Filter{Tags: nostr.TagMap{"t": {"abcdef"}}}, abcdef)
	e.want(nostr.Filter{Tags: nostr.TagMap{"t": {"ab"}}})
}

func TestEmptyTagValueMatchesOnlyItself(t *testing.T) {
	t.Parallel()
	e := newExactEnv(t)
	empty := e.put(30000, nostr.Tag{"d", ""})
	e.put(30000, nostr.Tag{"d", "friends"})
	e.put(1, nostr.Tag{"d", "x"})
	e.want(nostr.Filter{Tags: nostr.TagMap{"d": {""}}}, empty)
}

func TestAddressableReplacesOnlyItsExactAddress(t *testing.T) {
	t.Parallel()
	e := newExactEnv(t)
	xy := e.put(30000, nostr.Tag{"d", "xy"})
	x := e.put(30000, nostr.Tag{"d", "x"})
	e.want(nostr.Filter{Kinds: []int{30000}}, xy, x)
}

func TestMissingDIsOneAddress(t *testing.T) {
	t.Parallel()
	e := newExactEnv(t)
	friends := e.put(30000, nostr.Tag{"d", "friends"}, nostr.Tag{"p", "aa"})
	muted := e.put(30000, nostr.Tag{"d", "muted"})
	e.put(30000) // no d tag: the address d=""
	e.want(nostr.Filter{Kinds: []int{30000}, Authors: []string{friends.PubKey}, Tags: nostr.TagMap{"d": {"friends", "muted"}}}, friends, muted)
	// d="" is the same address as a missing d: it replaces that one and nothing else.
	empty := e.put(30000, nostr.Tag{"d", ""})
	e.want(nostr.Filter{Kinds: []int{30000}}, friends, muted, empty)
	// A newer friends list replaces the old one only.
	friends2 := e.put(30000, nostr.Tag{"d", "friends"})
	e.want(nostr.Filter{Kinds: []int{30000}}, friends2, muted, empty)
}

func TestMintReviewsSurvive(t *testing.T) {
	t.Parallel()
	e := newExactEnv(t)
	k := nostr.Tag{"k", "38172"}
	mintPK := "a7b1f3c0d8e2456f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"
	byPK := e.put(38000, k, nostr.Tag{"d", mintPK}, nostr.Tag{"u", "https://mint.example.com"})
	byURL := e.put(38000, k, nostr.Tag{"d", "https://mint.example.com/v2"}, nostr.Tag{"u", "https://mint.example.com/v2"})
	prefix := e.put(38000, k, nostr.Tag{"d", "https://mint.example.com"}, nostr.Tag{"u", "https://mint.example.com"})
	noD := e.put(38000, k, nostr.Tag{"u", "https://other.example"})
	e.want(nostr.Filter{Kinds: []int{38000}}, byPK, byURL, prefix, noD)
	e.want(nostr.Filter{Kinds: []int{38000}, Tags: nostr.TagMap{"u": {"https://mint.example.com"}}}, byPK, prefix)
}
