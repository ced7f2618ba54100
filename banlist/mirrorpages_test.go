package banlist

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/policies"
)

// followUntil runs svc's mirror of primary until it holds want bans.
func followUntil(t *testing.T, svc *Service, primary string, c *testkit.Clock, want int) {
	t.Helper()
	svc.primary = primary
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Follow(ctx); close(done) }()
	testkit.WaitFor(t, 60*time.Second, "the follower to take the primary's list", func() bool {
		synced := !svc.following.State(c.Now()).LastSuccess.IsZero()
		return synced && svc.List().ActiveBans(c.Now().Unix()) == want && !svc.List().Resyncing()
	})
	cancel()
	<-done
}

func countPages(t *testing.T, svc *Service) int {
	n := 0
	err := svc.db.View(func(txn *kv.Txn) error {
		return kv.EachKey(txn, []byte{kv.PrefixBanlist, kindMirrorPage}, func([]byte) (bool, error) { n++; return true, nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A follower keeps the primary's list as pages. Once it no longer follows,
// those bans are its own: a key lifted or banned anew stays so across a
// restart (its record is over the page), and the admin listing, the
// changes since a cursor and the status of a key show the paged bans as
// they showed records.
func TestPagedBansAreTheFollowersOwn(t *testing.T) {
	srv, keys := pagedPrimary(t, 2*maxPage+5_000)
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	before := c.Now()
	c.Add(10 * time.Second)
	followUntil(t, svc, srv.URL, c, len(keys))
	if n := countPages(t, svc); n != 3 {
		t.Fatalf("%d pages stored, want 3 (pages of maxPage)", n)
	}
	changes, err := svc.Changes(context.Background(), before)
	if err != nil || len(changes.Added) != len(keys) {
		t.Fatalf("changes since before the sync: %d added, %v; want %d", len(changes.Added), err, len(keys))
	}
	active, err := svc.Bans(context.Background(), StateActive, 0, 100_000)
	if err != nil || len(active) != len(keys) {
		t.Fatalf("admin listing: %d active bans, %v; want %d", len(active), err, len(keys))
	}
	if b := active[0]; b.Reason != "spam wave" || b.BannedBy != "follow:"+srv.URL || b.Batch == "" || b.State(c.Now().Unix()) != StateActive {
		t.Fatalf("a paged ban listed as %+v", b)
	}
	st.Close()

	// No longer a follower: the list is its own.
	c.Add(time.Second)
	svc, st = open(t, dir, c)
	lifted, renewed := keys[7], keys[len(keys)-3]
	if _, err := svc.Unban(context.Background(), "key:mod", lifted); err != nil {
		t.Fatalf("unban of a paged key: %v", err)
	}
	if _, err := svc.Ban(context.Background(), "key:mod", renewed, "worse", nil); err != nil {
		t.Fatal(err)
	}
	st.Close()

	svc, st = open(t, dir, c)
	defer st.Close()
	if n := svc.List().ActiveBans(c.Now().Unix()); n != len(keys)-1 {
		t.Fatalf("after a restart %d bans, want %d", n, len(keys)-1)
	}
	if _, ok := svc.Status(lifted); ok {
		t.Fatal("a paged key lifted is banned again after a restart")
	}
	if b, ok := svc.Status(renewed); !ok || b.Reason != "worse" {
		t.Fatalf("a paged key banned anew is %+v, %v after a restart", b, ok)
	}
	newest, err := svc.Bans(context.Background(), "", 0, 3)
	if err != nil || len(newest) != 3 || newest[0].PubKey != renewed || newest[1].PubKey != renewed || newest[1].State(c.Now().Unix()) != StateLifted || newest[2].PubKey != lifted {
		t.Fatalf("the newest bans: %+v, %v", newest, err)
	}
	if active, _ := svc.Bans(context.Background(), StateActive, 0, 100_000); len(active) != len(keys)-1 {
		t.Fatalf("admin listing after the changes: %d active, want %d", len(active), len(keys)-1)
	}
}

// A whole list taken anew (another primary) replaces the pages of the one
// before once it is all in: a restart then holds exactly the new list.
func TestNewListReplacesThePages(t *testing.T) {
	old, keysA := pagedPrimaryOf(t, hashKeys(0, 15_000))
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	followUntil(t, svc, old.URL, c, len(keysA))
	c.Add(time.Second)
	srv, keysB := pagedPrimaryOf(t, hashKeys(10_000, maxPage+2_000)) // 5,000 keys in both
	followUntil(t, svc, srv.URL, c, len(keysB))
	if n := countPages(t, svc); n != 2 {
		t.Fatalf("%d pages stored, want the new list's 2", n)
	}
	st.Close()

	svc, st = open(t, dir, c)
	defer st.Close()
	if n := svc.List().ActiveBans(c.Now().Unix()); n != len(keysB) {
		t.Fatalf("after a restart %d bans, want %d", n, len(keysB))
	}
	for _, k := range []string{keysB[0], keysB[len(keysB)-1]} {
		if _, ok := svc.Status(k); !ok {
			t.Fatalf("%s of the new list is not banned", k)
		}
	}
	for _, k := range keysA {
		if _, ok := svc.Status(k); ok && !slices.Contains(keysB, k) {
			t.Fatalf("%s, only in the old list, is banned after a restart", k)
		}
	}
}

// A follower stopped part-way through a new whole list (a kill, or a
// primary that fails after a page) has deleted nothing: after a restart it
// holds every key of the old list and of the pages of the new one taken.
func TestNewListCutShortKeepsBoth(t *testing.T) {
	old, keysA := pagedPrimaryOf(t, hashKeys(0, 15_000))
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	followUntil(t, svc, old.URL, c, len(keysA))
	c.Add(time.Second)

	full, keysB := pagedPrimaryOf(t, hashKeys(10_000, 25_000))
	var pages atomic.Int32
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("after") { // every page but the first
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		if r.URL.Path == "/blocked/pubkeys" {
			pages.Add(1)
		}
		httputil.NewSingleHostReverseProxy(must(url.Parse(full.URL))).ServeHTTP(w, r)
	}))
	defer cut.Close()
	svc.primary = cut.URL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Follow(ctx); close(done) }()
	testkit.WaitFor(t, 30*time.Second, "the first page of the new list", func() bool {
		_, ok := svc.Status(keysB[9_999])
		return pages.Load() > 0 && ok
	})
	cancel()
	<-done
	st.Close()

	svc, st = open(t, dir, c)
	defer st.Close()
	for _, k := range append(slices.Clone(keysA), keysB[:10_000]...) {
		if _, ok := svc.Status(k); !ok {
			t.Fatalf("%s is allowed after a restart part-way through a new list", k)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func pageIDs(t *testing.T, svc *Service) []string {
	var ids []string
	err := svc.db.View(func(txn *kv.Txn) error {
		return kv.EachKey(txn, []byte{kv.PrefixBanlist, kindMirrorPage}, func(id []byte) (bool, error) {
			ids = append(ids, string(id))
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A restart takes the primary's whole list again: pages it holds as they
// are are not written again, so a restart costs reads, not a rewrite.
func TestRestartWritesNoSamePage(t *testing.T) {
	srv, keys := pagedPrimary(t, 2*maxPage+5_000)
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	followUntil(t, svc, srv.URL, c, len(keys))
	before := pageIDs(t, svc)
	st.Close()

	svc, st = open(t, dir, c)
	defer st.Close()
	followUntil(t, svc, srv.URL, c, len(keys))
	if after := pageIDs(t, svc); !slices.Equal(before, after) {
		t.Fatalf("the pages after a restart's resync are %d new ones, want the %d held", len(after), len(before))
	}
}

// A follower restarted while its primary's list keeps changing writes the
// pages that changed each time; once the pages hold over twice the list,
// it writes the list anew and deletes the rest.
func TestChangedPagesDoNotPileUp(t *testing.T) {
	var round atomic.Int32
	keys := hashKeys(0, 25_000)
	srv, _ := pagedPrimaryWith(t, keys, func(k string) string {
		if k == keys[0] {
			return fmt.Sprintf("spam wave %d", round.Load())
		}
		return "spam wave"
	})
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	most := 0
	for range 8 {
		svc, st := open(t, dir, c)
		followUntil(t, svc, srv.URL, c, len(keys))
		most = max(most, countPages(t, svc))
		if b, ok := svc.Status(keys[0]); !ok || b.Reason != fmt.Sprintf("spam wave %d", round.Load()) {
			t.Fatalf("round %d: %s is %+v, %v", round.Load(), keys[0], b, ok)
		}
		st.Close()
		round.Add(1)
	}
	if most > 7 { // 3 pages of the list, and one more each restart until 25,000×2+10,000 bans are paged
		t.Fatalf("up to %d pages stored for a list of 3", most)
	}
	svc, st := open(t, dir, c)
	defer st.Close()
	if n := svc.List().ActiveBans(c.Now().Unix()); n != len(keys) {
		t.Fatalf("after the restarts %d bans, want %d", n, len(keys))
	}
}

// A full page is over badger's value threshold (1 MiB, the most it
// allows) at its smallest (one reason, no expiry), so badger writes it to
// the value log, not through its memtables and table builders
// (maxPage).
func TestFullPageGoesToTheValueLog(t *testing.T) {
	keys := hashKeys(0, maxPage)
	bans := make([]policies.Ban, len(keys))
	for i, k := range keys {
		bans[i] = policies.Ban{PubKey: k, Reason: "spam wave"}
	}
	if n := len(encodePage(bans)); n < 1<<20 {
		t.Fatalf("a full page is %d bytes: under badger's value threshold of 1 MiB", n)
	}
}

// followGC tightens the collector while any of its callers needs it, and
// puts back what it was once the last is done, however they overlap.
func TestFollowGCOverlapping(t *testing.T) {
	t.Setenv("GOGC", "")
	was := debug.SetGCPercent(77)
	defer debug.SetGCPercent(was)
	gogc := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	first := followGC()
	second := followGC()
	first()
	first() // a second call does nothing
	if p := gogc(); p != followGCPercent {
		t.Fatalf("GOGC %d while a second load still runs, want %d", p, followGCPercent)
	}
	second()
	if p := gogc(); p != 77 {
		t.Fatalf("GOGC %d after both, want 77 as before", p)
	}
}
