package policies

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// pagedServer answers a list of keys in pages of 1,000 as an outpost
// does, its changes as none, and calls during before each page but the
// first; a during that returns false fails that page.
type pagedServer struct {
	id     Identity
	keys   []string // sorted
	during func(after string) bool
}

func (p *pagedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail := fmt.Sprintf(`"cursor":"1","service_pubkey":%q,"epoch":%q`, p.id.PubKey, p.id.Epoch)
	switch {
	case strings.HasSuffix(r.URL.Path, "/words"):
		jsonAnswer(`{"words":[],"added":[],"removed":[],`+tail+`}`)(w, r)
		return
	case q.Has("since"):
		jsonAnswer(`{"added":[],"lifted":[],"expired":[],`+tail+`}`)(w, r)
		return
	}
	after := q.Get("after")
	if after != "" && p.during != nil && !p.during(after) {
		http.Error(w, "failing", http.StatusBadGateway)
		return
	}
	from := 0
	for from < len(p.keys) && after != "" && p.keys[from] <= after {
		from++
	}
	end := min(from+1000, len(p.keys))
	var entries []string
	for _, k := range p.keys[from:end] {
		entries = append(entries, fmt.Sprintf(`{"pubkey":%q,"reason":"wave","expires_at":null}`, k))
	}
	next := "null"
	if end < len(p.keys) {
		next = `"` + p.keys[end-1] + `"`
	}
	jsonAnswer(`{"pubkeys":[`+strings.Join(entries, ",")+`],"next":`+next+`,`+tail+`}`)(w, r)
}

// validKeys are n public keys (hex), sorted.
func validKeys(n int) []string {
	var keys []string
	for i := 1; len(keys) < n; i++ {
		if k, err := pubkey.Parse(fmt.Sprintf("%064x", i)); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// A whole list taken in pages replaces the one held page by page, with no
// moment at which a key banned in both lists is allowed, and the keys only
// the old list had are lifted only once the new one is all in. A fetch
// that fails part-way lifts nothing; the next takes the list from the
// start. (Before, the pages were collected whole and then set at once: a
// million keys held twice over.)
func TestResyncNeverAllowsAKeyBannedInBoth(t *testing.T) {
	t.Parallel()
	keys := validKeys(4500)
	var oldOnly, both, newOnly, oldList, newList []string
	for i, k := range keys {
		switch i % 3 {
		case 0:
			oldOnly, oldList = append(oldOnly, k), append(oldList, k)
		case 1:
			both, oldList, newList = append(both, k), append(oldList, k), append(newList, k)
		case 2:
			newOnly, newList = append(newOnly, k), append(newList, k)
		}
	}
	a := &pagedServer{id: Identity{PubKey: "aa", Epoch: "1"}, keys: oldList}
	h := newHostile(t, a.ServeHTTP)
	list, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{Interval: 5 * time.Millisecond, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if n := list.ActiveBans(0); n != len(oldList) {
		t.Fatalf("%d bans from the first server, want %d", n, len(oldList))
	}

	var mu sync.Mutex
	var faults []string
	var pages, failed atomic.Int64
	banned := func(pks []string) (out int) {
		for _, pk := range pks {
			if _, ok := list.Banned(pk, 0); ok {
				out++
			}
		}
		return out
	}
	b := &pagedServer{id: Identity{PubKey: "bb", Epoch: "1"}, keys: newList}
	// The page after a is asked for while the page ending at a is applied
	// (one ahead), so by then the page before that one, ending at the
	// previous request's after, must be in; a request that goes back is a
	// new attempt from the first page.
	var prev string
	b.during = func(after string) bool {
		pages.Add(1)
		mu.Lock()
		applied := prev
		if after <= prev {
			applied = ""
		}
		prev = after
		mu.Unlock()
		for _, k := range newOnly {
			if _, ok := list.Banned(k, 0); k <= applied && !ok {
				mu.Lock()
				faults = append(faults, fmt.Sprintf("page after %.8s asked before the page ending at %.8s was applied (more than one page ahead)", after, applied))
				mu.Unlock()
				break
			}
		}
		if n := banned(both); n != len(both) {
			mu.Lock()
			faults = append(faults, fmt.Sprintf("page after %.8s: %d of the %d keys banned in both lists allowed", after, len(both)-n, len(both)))
			mu.Unlock()
		}
		if n := banned(oldOnly); n != len(oldOnly) {
			mu.Lock()
			faults = append(faults, fmt.Sprintf("page after %.8s: %d of the old list's own keys lifted before the new list was in", after, len(oldOnly)-n))
			mu.Unlock()
		}
		// The third page fails once: the list held stays whole.
		return after != b.keys[1999] || failed.Add(1) > 1
	}
	h.set(b.ServeHTTP)
	testkit.WaitFor(t, 10*time.Second, "the new server's list to replace the old", func() bool {
		return banned(newOnly) == len(newOnly) && banned(oldOnly) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, f := range faults {
		t.Error(f)
	}
	if n := list.ActiveBans(0); n != len(b.keys) || banned(both) != len(both) {
		t.Errorf("%d bans held, want the new server's %d", n, len(b.keys))
	}
	if pages.Load() < 3 || failed.Load() < 2 {
		t.Errorf("%d pages after the first, the failing one asked %d times: the test did not test", pages.Load(), failed.Load())
	}
}
