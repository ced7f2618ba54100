package banlist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// pagedPrimary serves n keys as a primary does, in pages of up to 10,000
// by ?after=, with no changes since.
func pagedPrimary(t *testing.T, n int) (*httptest.Server, []string) {
	return pagedPrimaryOf(t, hashKeys(0, n))
}

// hashKeys are n test keys from the i-th on, sorted.
func hashKeys(i, n int) []string {
	keys := make([]string, n)
	for j := range keys {
		s := sha256.Sum256([]byte(strconv.Itoa(i + j)))
		keys[j] = hex.EncodeToString(s[:])
	}
	slices.Sort(keys)
	return keys
}

// pagedPrimaryOf serves keys (sorted) as pagedPrimary does.
func pagedPrimaryOf(t *testing.T, keys []string) (*httptest.Server, []string) {
	return pagedPrimaryWith(t, keys, func(string) string { return "spam wave" })
}

// pagedPrimaryWith serves keys (sorted), each banned for reason(key).
func pagedPrimaryWith(t *testing.T, keys []string, reason func(k string) string) (*httptest.Server, []string) {
	issuer := Issuer{Cursor: "1700000000000.e1", Epoch: "e1", ServicePubKey: pk(1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/blocked/words":
			json.NewEncoder(w).Encode(BlockedWords{Words: []string{"scam"}, Issuer: issuer})
		case q.Has("since"):
			w.Write([]byte(`{"added":[],"lifted":[],"expired":[],"cursor":"1700000000000.e1","epoch":"e1","service_pubkey":"` + pk(1) + `"}`))
		default:
			from, _ := slices.BinarySearch(keys, q.Get("after"))
			if from < len(keys) && keys[from] == q.Get("after") {
				from++
			}
			end := min(from+10_000, len(keys))
			p := BlockedPage{PubKeys: []BlockedPubKey{}, Issuer: issuer}
			for _, k := range keys[from:end] {
				p.PubKeys = append(p.PubKeys, BlockedPubKey{PubKey: pubkey.NPub(k), Reason: reason(k)})
			}
			if end < len(keys) {
				p.Next = &keys[end-1]
			}
			json.NewEncoder(w).Encode(p)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, keys
}

// A follower that restarts keeps the list it mirrored, and enforces it
// while its primary is away: what it took is in its store, not only in
// memory.
func TestFollowerRestartKeepsItsList(t *testing.T) {
	srv, keys := pagedPrimary(t, 25_000)
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	svc.primary = srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Follow(ctx); close(done) }()
	testkit.WaitFor(t, 60*time.Second, "the follower to take the primary's list", func() bool {
		_, word := svc.List().BlockedWord("a scam")
		return svc.List().ActiveBans(c.Now().Unix()) == len(keys) && word
	})
	cancel()
	<-done
	st.Close()
	srv.Close() // the primary is away

	svc, st = open(t, dir, c)
	defer st.Close()
	if n := svc.List().ActiveBans(c.Now().Unix()); n != len(keys) {
		t.Fatalf("after a restart the follower holds %d bans, want %d", n, len(keys))
	}
	for _, k := range []string{keys[0], keys[len(keys)/2], keys[len(keys)-1]} {
		if b, ok := svc.Status(k); !ok || b.Reason != "spam wave" {
			t.Fatalf("after a restart %s is %+v, %v", k, b, ok)
		}
	}
	if _, word := svc.List().BlockedWord("a scam"); !word {
		t.Fatal("after a restart the mirrored word is gone")
	}
}
