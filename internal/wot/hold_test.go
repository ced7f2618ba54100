package wot_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// freshKeys are n keys no other test names, numbered from from.
func freshKeys(tag byte, from, n int) []wot.Key {
	keys := make([]wot.Key, n)
	for i := range keys {
		keys[i][0], keys[i][1] = 'F', tag
		binary.BigEndian.PutUint64(keys[i][2:], uint64(from+i))
	}
	return keys
}

// relayWoT is a web of trust wired as outpost wires it: on the relay's
// store, taking the contact lists the relay saves, which stay there.
type relayWoT struct {
	*wot.WoT
	st *store.Store
}

func newRelayWoT(t *testing.T, cfg wot.Settings) relayWoT {
	t.Helper()
	st := storetest.Open(t, storetest.Options{})
	w, err := wot.New(wot.Config{Settings: cfg, DB: st.DB, Events: st.Events, Log: discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return relayWoT{w, st}
}

// save saves ev in the relay's store and, as the relay does then, applies it.
func (r relayWoT) save(t *testing.T, ev *nostr.Event) {
	t.Helper()
	ev.ID = ev.GetID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, errs, err := r.st.Events.SaveBatch(ctx, []*nostr.Event{ev}); err != nil || errs[0] != nil {
		t.Fatalf("saving %s: %v %v", ev.PubKey[:8], err, errs[0])
	}
	if err := r.Apply(ev); err != nil {
		t.Fatal(err)
	}
}

// A flood of contact lists by keys outside the web of trust — many fresh
// keys, each following thousands of fresh keys, and a key the walk reaches
// but does not go through (hop 2 of depth 2) — leaves the graph as it was:
// no id, no follow. When a member then follows one of the flooders, its
// list, kept in the relay's store, is taken at once.
func TestFloodLeavesGraph(t *testing.T) {
	seed, a, b := key("seed"), key("a"), key("b")
	r := newRelayWoT(t, settingsWithSeeds(seed))
	r.save(t, contactList(seed, 100, a))
	r.save(t, contactList(a, 100, b))
	keys, follows, _ := r.Size()
	flooders := freshKeys(0, 0, 50)
	for i, f := range flooders {
		r.save(t, contactList(f, 100, freshKeys(1, i*2_000, 2_000)...))
	}
	r.save(t, contactList(b, 100, freshKeys(2, 0, 5_000)...)) // hop 2: its list takes no one further
	if k, f, _ := r.Size(); k != keys || f != follows {
		t.Fatalf("after the flood the graph has %d keys and %d follows, before %d and %d", k, f, keys, follows)
	}
	if st := r.Standing(freshKeys(1, 0, 1)[0]); st.Hops != -1 {
		t.Fatalf("a flooder's follow stands %+v", st)
	}
	r.save(t, contactList(a, 200, b, flooders[0]))
	if st := r.Standing(freshKeys(1, 0, 1)[0]); st.Hops != -1 {
		t.Fatalf("a hop-2 key's follow stands %+v, beyond the depth", st)
	}
	r.save(t, contactList(seed, 200, a, flooders[0]))
	if st := r.Standing(freshKeys(1, 0, 1)[0]); st.Hops != 2 || st.Followers != 1 {
		t.Fatalf("once a seed follows the flooder, its follow stands %+v; want hops 2, 1 follower", st)
	}
	if !r.Follows(flooders[1], freshKeys(1, 2_000, 1)[0]) {
		t.Error("Follows does not read a list the graph does not hold")
	}
	r.save(t, contactList(seed, 300, a)) // the flooder is back at hop 2: his list goes
	if _, f, _ := r.Size(); f != 3 {
		t.Fatalf("once the seed unfollows the flooder the graph holds %d follows; want the seed's 1 and a's 2", f)
	}
}

// Lists come within reach hop by hop after a restart too: a web of trust
// opened again on a store holding lists it never held (the relay's, and
// the records of a version that held every list) takes the needed ones.
func TestEnteringAfterRestart(t *testing.T) {
	seed, a, b, c := key("seed"), key("a"), key("b"), key("c")
	cfg := settingsWithSeeds(seed)
	r := newRelayWoT(t, cfg)
	r.save(t, contactList(b, 100, c)) // not within reach: kept by the relay only
	r.save(t, contactList(a, 100, b))
	r.save(t, contactList(seed, 100, a))
	if st := r.Standing(c); st.Hops != -1 {
		t.Fatalf("c stands %+v with depth 2", st)
	}
	r.save(t, contactList(seed, 200, b))
	if st := r.Standing(c); st.Hops != 2 {
		t.Fatalf("c stands %+v once the seed follows b; want hops 2", st)
	}
	w2, err := wot.New(wot.Config{Settings: cfg, DB: r.st.DB, Events: r.st.Events, Log: discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []wot.Key{seed, a, b, c} {
		if got, want := w2.Standing(k).Hops, r.Standing(k).Hops; got != want {
			t.Errorf("%s after reopening: hops %d, want %d", k[:4], got, want)
		}
	}
}

// The graph stays within its bound: past it the farthest members' lists go
// first, the longest of them first, and the seeds' reach stays whole.
func TestBound(t *testing.T) {
	seed := key("seed")
	r := newRelayWoT(t, settingsWithSeeds(seed))
	const follows, keys = 5_000, 8_000
	wot.SetBounds(r.WoT, follows, keys, 1_000)
	members := freshKeys(3, 0, 10)
	r.save(t, contactList(seed, 100, members...))
	for i, m := range members {
		set(t, r.WoT, m, 100, freshKeys(4, i*1_000, 1_000))
	}
	k, f, full := r.Size()
	t.Logf("10 members of 1,000 follows each under a bound of %d follows: %d keys, %d follows held, full %v", follows, k, f, full)
	if f > follows || k > keys || !full {
		t.Fatalf("%d keys and %d follows held (full %v), bound %d and %d", k, f, full, keys, follows)
	}
	for i := range 10 {
		set(t, r.WoT, members[0], 200+i, freshKeys(5, i*10_000, 10_000))
		if k, f, _ := r.Size(); f > follows || k > keys {
			t.Fatalf("round %d: %d keys and %d follows held, bound %d and %d", i, k, f, keys, follows)
		}
	}
	for _, m := range members {
		if st := r.Standing(m); st.Hops != 1 || !st.Member {
			t.Fatalf("a seed's follow stands %+v when the graph is full", st)
		}
	}
	if st := r.Standing(freshKeys(4, 9_000, 1)[0]); st.Hops != 2 {
		t.Errorf("a short list of hop 1 was let go for a longer one: its follow stands %+v", st)
	}
}

// A member republishing lists of fresh keys does not grow the graph: the
// ids of keys no list names any more are freed.
func TestRepublishFreesIDs(t *testing.T) {
	seed, a := key("seed"), key("a")
	r := newRelayWoT(t, settingsWithSeeds(seed))
	wot.SetBounds(r.WoT, 1<<30, 1<<30, 1_000)
	r.save(t, contactList(seed, 100, a))
	most := 0
	for i := range 30 {
		set(t, r.WoT, a, 100+i, freshKeys(6, i*2_000, 2_000))
		k, _, _ := r.Size()
		most = max(most, k)
	}
	t.Logf("30 lists of 2,000 fresh keys: at most %d keys", most)
	if most > 2*2_000+1_000+2 {
		t.Errorf("the graph grew to %d keys for one list of 2,000", most)
	}
	if st := r.Standing(freshKeys(6, 29*2_000, 1)[0]); st.Hops != 2 {
		t.Errorf("a's newest follow stands %+v", st)
	}
}

// records counts the web of trust's own records of contact lists.
func (r relayWoT) records(t *testing.T) int {
	t.Helper()
	n := 0
	err := r.st.DB.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{kv.PrefixWot, 'c'}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// reopen is a web of trust opened again on r's store, as a restart does.
func (r relayWoT) reopen(t *testing.T, cfg wot.Settings) relayWoT {
	t.Helper()
	w, err := wot.New(wot.Config{Settings: cfg, DB: r.st.DB, Events: r.st.Events, Log: discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return relayWoT{w, r.st}
}

// The contact lists the relay saved are read from its store after a
// restart, not copied into records of the web of trust's own (writing
// 260 MB of them at 200,000 lists set badger compacting, which took more
// memory than the graph); a record of an older list, as a version that
// kept every list left, gives way to the relay's newer one and is deleted.
func TestSavedListsNotCopied(t *testing.T) {
	seed, a, b, c := key("seed"), key("a"), key("b"), key("c")
	cfg := settingsWithSeeds(seed)
	r := newRelayWoT(t, cfg)
	set(t, r.WoT, seed, 100, []wot.Key{c}) // a list the relay does not have: kept as a record
	r.save(t, contactList(seed, 200, a))
	r.save(t, contactList(a, 200, b))
	if n := r.records(t); n != 1 {
		t.Fatalf("%d list records after the relay saved two lists; want the one it lacks", n)
	}
	r2 := r.reopen(t, cfg)
	if st := r2.Standing(b); st.Hops != 2 {
		t.Fatalf("after a restart b stands %+v; want hops 2", st)
	}
	if st := r2.Standing(c); st.Hops != -1 {
		t.Fatalf("after a restart the seed's older list (a record) won: c stands %+v", st)
	}
	if n := r2.records(t); n != 0 {
		t.Fatalf("%d list records after a restart; the relay's store has newer lists of all", n)
	}
}

// set applies author's list of follows, as a fetch of many does.
func set(t *testing.T, w *wot.WoT, author wot.Key, at int, follows []wot.Key) {
	t.Helper()
	if err := w.SetLists([]wot.List{{Author: author, At: uint32(at), Follows: follows}}); err != nil {
		t.Fatal(err)
	}
}
