package wot_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/internal/wot"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newWoT is a web of trust with cfg on a store in the test's directory.
func newWoT(t testing.TB, cfg wot.Settings) *wot.WoT {
	t.Helper()
	return openWoT(t, storetest.Open(t, storetest.Options{}).DB, cfg)
}

func openWoT(t testing.TB, db *kv.DB, cfg wot.Settings) *wot.WoT {
	t.Helper()
	w, err := wot.New(wot.Config{Settings: cfg, DB: db, Log: discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

// key makes a test key from a name.
func key(name string) wot.Key {
	var k wot.Key
	copy(k[:], name)
	return k
}

func hexKey(k wot.Key) string { return fmt.Sprintf("%x", k[:]) }

// contactList is a kind-3 event of author following follows.
func contactList(author wot.Key, at int64, follows ...wot.Key) *nostr.Event {
	ev := &nostr.Event{Kind: nostr.KindFollowList, PubKey: hexKey(author), CreatedAt: nostr.Timestamp(at)}
	for _, f := range follows {
		ev.Tags = append(ev.Tags, nostr.Tag{"p", hexKey(f)})
	}
	return ev
}

func apply(t *testing.T, w *wot.WoT, evs ...*nostr.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := w.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
}

func settingsWithSeeds(seeds ...wot.Key) wot.Settings {
	cfg := wot.DefaultSettings()
	for _, s := range seeds {
		cfg.Seeds = append(cfg.Seeds, hexKey(s))
	}
	return cfg
}

// The standing of each key of a small graph, by hand, with 2 followers
// needed beyond hop 1: seed → a, b; a → c; a, b → d; c → e (c is not a
// member: one follower, so e is not reached).
func TestStanding(t *testing.T) {
	seed, a, b, c, d, e := key("seed"), key("a"), key("b"), key("c"), key("d"), key("e")
	cfg := settingsWithSeeds(seed)
	cfg.MinFollowers = 2
	w := newWoT(t, cfg)
	now := time.Now().Unix()
	apply(t, w, contactList(seed, now, a, b), contactList(a, now, c, d, seed), contactList(b, now, d), contactList(c, now, e))
	for _, tc := range []struct {
		name      string
		k         wot.Key
		hops      int
		followers int
		member    bool
	}{
		{"seed", seed, 0, 0, true}, {"a", a, 1, 1, true}, {"b", b, 1, 1, true},
		{"c", c, 2, 1, false}, {"d", d, 2, 2, true}, {"e", e, -1, 0, false}, {"stranger", key("x"), -1, 0, false},
	} {
		st := w.Standing(tc.k)
		if st.Hops != tc.hops || st.Followers != tc.followers || st.Member != tc.member {
			t.Errorf("%s: got %+v, want hops %d followers %d member %v", tc.name, st, tc.hops, tc.followers, tc.member)
		}
	}
	w.Rerank()
	if ra, rd := w.Standing(a).Rank, w.Standing(d).Rank; ra <= 0 || rd <= 0 {
		t.Errorf("rank of a %v, of d %v; want both above 0", ra, rd)
	}
	// c is not a member, so its list is not held: it brings nothing behind
	// it, not even rank.
	if rc, re := w.Standing(c).Rank, w.Standing(e).Rank; rc <= 0 || re != 0 {
		t.Errorf("rank of c %v, of e %v: want c's above 0 (members follow it), e's 0", rc, re)
	}
}

// A seed's new contact list without a key takes its standing away before
// Apply returns; an older list than the one held changes nothing.
func TestUnfollowAtOnce(t *testing.T) {
	seed, a := key("seed"), key("a")
	w := newWoT(t, settingsWithSeeds(seed))
	apply(t, w, contactList(seed, 100, a))
	if !w.Standing(a).Member {
		t.Fatal("a is not a member")
	}
	apply(t, w, contactList(seed, 200))
	if st := w.Standing(a); st.Member || st.Hops != -1 {
		t.Fatalf("after the unfollow a stands %+v", st)
	}
	apply(t, w, contactList(seed, 150, a))
	if w.Standing(a).Member {
		t.Fatal("an older list brought a back")
	}
}

// The graph and first-seen times outlive the process: a web of trust
// opened again on the same store stands every key where it stood.
func TestPersisted(t *testing.T) {
	seed, a, b := key("seed"), key("a"), key("b")
	st := storetest.Open(t, storetest.Options{})
	cfg := settingsWithSeeds(seed)
	w := openWoT(t, st.DB, cfg)
	apply(t, w, contactList(seed, 100, a), contactList(a, 100, b))
	if err := w.Seen(key("poster")); err != nil {
		t.Fatal(err)
	}
	w2 := openWoT(t, st.DB, cfg)
	for _, k := range []wot.Key{seed, a, b} {
		if got, want := w2.Standing(k), w.Standing(k); got != want {
			t.Errorf("%x after reopening: got %+v, want %+v", k[:4], got, want)
		}
	}
	if _, found, err := w2.FirstSeen(key("poster")); !found || err != nil {
		t.Errorf("poster's first-seen time after reopening: found %v, err %v", found, err)
	}
}

// A key's age counts from when outpost first received an event of it, and
// a later event, however far back it is dated, does not move it.
func TestFirstSeenIsReceipt(t *testing.T) {
	w := newWoT(t, settingsWithSeeds(key("seed")))
	k := key("newcomer")
	if _, found, _ := w.FirstSeen(k); found {
		t.Fatal("an unseen key has a first-seen time")
	}
	before := time.Now().Add(-time.Second)
	if err := w.Seen(k); err != nil {
		t.Fatal(err)
	}
	first, found, err := w.FirstSeen(k)
	if !found || err != nil || first.Before(before) {
		t.Fatalf("first seen %v, %v, %v; want at or after %v", first, found, err, before)
	}
	// A contact list dated 400 days back makes k a list author, not older.
	apply(t, w, contactList(k, time.Now().Add(-400*24*time.Hour).Unix(), key("x")))
	if err := w.Seen(k); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := w.FirstSeen(k); !again.Equal(first) {
		t.Fatalf("first seen moved from %v to %v", first, again)
	}
}

// A key the web of trust reaches is first seen then, without an event.
func TestFirstSeenWhenFollowed(t *testing.T) {
	seed, a := key("seed"), key("a")
	w := newWoT(t, settingsWithSeeds(seed))
	apply(t, w, contactList(seed, 100, a))
	if _, found, err := w.FirstSeen(a); !found || err != nil {
		t.Fatalf("a followed by the seed: first seen found %v, err %v", found, err)
	}
}

// Without seeds no key is a member.
func TestNoSeeds(t *testing.T) {
	w := newWoT(t, wot.DefaultSettings())
	apply(t, w, contactList(key("a"), 100, key("b")))
	if w.Enabled() || w.Standing(key("b")).Member || w.Members() != 0 {
		t.Fatal("a web of trust without seeds has members")
	}
}

// Tags that are not keys are skipped; a list longer than MaxFollows is cut.
func TestContactListParsing(t *testing.T) {
	seed := key("seed")
	cfg := settingsWithSeeds(seed)
	cfg.MaxFollows = 2
	w := newWoT(t, cfg)
	ev := contactList(seed, 100, key("a"))
	ev.Tags = append(nostr.Tags{{"p"}, {"p", "zz"}, {"e", hexKey(key("e"))}, {"p", hexKey(key("a"))[:63] + "g"}}, ev.Tags...)
	ev.Tags = append(ev.Tags, nostr.Tag{"p", hexKey(key("b"))}, nostr.Tag{"p", hexKey(key("c"))})
	apply(t, w, ev)
	for name, want := range map[string]bool{"a": true, "b": true, "c": false, "e": false} {
		if got := w.Standing(key(name)).Member; got != want {
			t.Errorf("%s member %v, want %v", name, got, want)
		}
	}
	if err := w.Apply(&nostr.Event{Kind: 1, PubKey: hexKey(seed)}); err != wot.ErrNotContactList {
		t.Errorf("a kind 1: got %v, want ErrNotContactList", err)
	}
}

// Rank follows a changed list once Run computes it again.
func TestRunRanks(t *testing.T) {
	seed, a := key("seed"), key("a")
	w := newWoT(t, settingsWithSeeds(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go w.Run(ctx)
	apply(t, w, contactList(seed, 100, a))
	for w.Standing(a).Rank == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("a's rank never came")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
