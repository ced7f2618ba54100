package banlistapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/policies"
)

// bulkKeys are valid public keys (x coordinates on the curve), cheap to
// make by the ten thousand.
var bulkKeys = func() []string {
	var out []string
	for i := 1; len(out) < 4*banlist.MaxBatch+10; i++ {
		if k, err := pubkey.Parse(fmt.Sprintf("%064x", i)); err == nil {
			out = append(out, k)
		}
	}
	return out
}()

func bulkKey(i int) string { return bulkKeys[i] }

// ndjson is n bans, one a line, of keys from first on.
func ndjson(first, n int, extra string) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, `{"pubkey":"%s","reason":"spam wave"%s}`+"\n", bulkKey(i), extra)
	}
	return b.String()
}

// TestBulkBans: POST /admin/bans takes a JSON array (npub or hex) or NDJSON,
// enforces every ban at once, audits the batch once and refuses what is
// too much or not allowed.
func TestBulkBans(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	api := e.api
	arr := []any{
		map[string]any{"pubkey": pubkey.NPub(bulkKey(0)), "reason": "spam"},
		map[string]any{"pubkey": bulkKey(1), "reason": "flood", "duration": 60},
		map[string]any{"pubkey": bulkKey(2), "reason": "flood", "expires_at": e.clock.Now().Unix() + 60},
	}
	r := api.Do("POST", "/admin/bans", arr, bearer(adminKey)...)
	wantStatus(t, r, 200, "")
	var res struct {
		Status string        `json:"status"`
		Batch  banlist.Batch `json:"batch"`
	}
	r.JSON(t, &res)
	if res.Status != "banned" || res.Batch.Banned != 3 {
		t.Fatalf("answer %s", r.Body)
	}
	st := api.Do("GET", "/blocked/pubkeys/"+bulkKey(1), nil).Map(t)
	if st["blocked"] != true || st["expires_at"] != float64(e.clock.Now().Unix()+60) {
		t.Errorf("status of a ban with duration: %v", st)
	}

	start := time.Now()
	r = api.Do("POST", "/admin/bans", ndjson(3, banlist.MaxBatch, ""), bearer(adminKey)[0], bearer(adminKey)[1], "Content-Type", "application/x-ndjson")
	wantStatus(t, r, 200, "")
	t.Logf("%d bans as NDJSON in %v", banlist.MaxBatch, time.Since(start))
	if n := e.svc.List().ActiveBans(e.clock.Now().Unix()); n != banlist.MaxBatch+3 {
		t.Errorf("%d bans enforced, want %d", n, banlist.MaxBatch+3)
	}
	audit := api.Do("GET", "/admin/audit?limit=10", nil, bearer(adminKey)...).Map(t)["audit"].([]any)
	if len(audit) != 2 || audit[0].(map[string]any)["action"] != "ban.batch" {
		t.Errorf("audit log: %v", audit)
	}
	bans := api.Do("GET", "/admin/bans?limit=1", nil, bearer(adminKey)...).Map(t)["bans"].([]any)
	if len(bans) != 1 || bans[0].(map[string]any)["batch"] == "" {
		t.Errorf("a bulk ban does not name its batch: %v", bans)
	}

	ndHeaders := []string{"Authorization", "Bearer " + adminKey, "Content-Type", "application/x-ndjson"}
	wantStatus(t, api.Do("POST", "/admin/bans", ndjson(0, banlist.MaxBatch+1, ""), ndHeaders...), 400, "invalid_batch")
	wantStatus(t, api.Do("POST", "/admin/bans", ndjson(0, 2, "")+"{\n", ndHeaders...), 400, "invalid_json")
	long := `,"comment":"` + strings.Repeat("x", 1000) + `"`
	wantStatus(t, api.Do("POST", "/admin/bans", ndjson(0, banlist.MaxBatch, long), ndHeaders...), 413, "request_too_large")
	r = api.Do("POST", "/admin/bans", ndjson(0, 5, "")+`{"pubkey":"bad","reason":"x"}`, ndHeaders...)
	wantStatus(t, r, 400, "invalid_pubkey")
	if d, _ := r.Map(t)["details"].(map[string]any); d["index"] != float64(5) {
		t.Errorf("the refusal does not name the bad ban: %s", r.Body)
	}
	if n := len(api.Do("GET", "/admin/audit?limit=10", nil, bearer(adminKey)...).Map(t)["audit"].([]any)); n != 2 {
		t.Errorf("refused batches were audited: %d entries", n)
	}
	wantStatus(t, api.Do("POST", "/admin/bans", arr), 401, "unauthorized")
}

// TestBulkWords: POST /admin/words with an array blocks every word in it.
func TestBulkWords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	r := e.api.Do("POST", "/admin/words", []string{"rugpull", "free money", "RUGPULL"}, bearer(adminKey)...)
	wantStatus(t, r, 201, "")
	var res struct {
		Batch banlist.WordBatch `json:"batch"`
	}
	if r.JSON(t, &res); len(res.Batch.Added) != 2 {
		t.Fatalf("answer %s", r.Body)
	}
	if w, ok := e.svc.List().BlockedWord("get FREE money"); !ok || w != "free money" {
		t.Errorf("not enforced: %q %v", w, ok)
	}
	wantStatus(t, e.api.Do("POST", "/admin/words", []any{"ok", 5}, bearer(adminKey)...), 400, "invalid_json")
	wantStatus(t, e.api.Do("POST", "/admin/words", []string{"ok", "???"}, bearer(adminKey)...), 400, "invalid_word")
	wantStatus(t, e.api.Do("POST", "/admin/words", []string{}, bearer(adminKey)...), 400, "invalid_batch")
	if _, ok := e.svc.List().BlockedWord("ok"); ok {
		t.Error("a refused batch blocked a word")
	}
}

// TestBlockedPages: ?limit pages through the active bans in order of key,
// every ban once, and the first page's cursor then gives what changed while
// paging.
func TestBlockedPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	const n = 2500
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, `{"pubkey":"%s","reason":"wave"}`+"\n", bulkKey(i))
	}
	wantStatus(t, e.api.Do("POST", "/admin/bans", body.String(), "Authorization", "Bearer "+adminKey, "Content-Type", "application/x-ndjson"), 200, "")
	wantStatus(t, e.api.Do("POST", "/admin/unban", map[string]any{"pubkey": bulkKey(7)}, bearer(adminKey)...), 200, "")

	seen := map[string]bool{}
	var cursor, after, last string
	for pages := 0; ; pages++ {
		path := "/blocked/pubkeys?limit=1000"
		if after != "" {
			path += "&after=" + after
		}
		r := e.api.Do("GET", path, nil)
		wantStatus(t, r, 200, "")
		var page banlist.BlockedPage
		r.JSON(t, &page)
		if cursor == "" {
			cursor = page.Cursor
			// A ban made while paging: the delta since the first page has it.
			e.clock.Add(time.Second)
			wantStatus(t, e.api.Do("POST", "/admin/ban", map[string]any{"pubkey": bulkKey(n), "reason": "late"}, bearer(adminKey)...), 200, "")
		}
		for _, b := range page.PubKeys {
			hex, _ := pubkey.ParseForLookup(b.PubKey)
			if seen[hex] || hex <= last {
				t.Fatalf("page %d: %s again or out of order", pages, hex)
			}
			seen[hex], last = true, hex
		}
		if page.Next == nil {
			break
		}
		after = *page.Next
		if pages > n/1000+2 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) < n-1 || seen[bulkKey(7)] {
		t.Errorf("paged %d bans (the lifted one: %v), want the %d active", len(seen), seen[bulkKey(7)], n-1)
	}
	r := e.api.Do("GET", "/blocked/pubkeys?since="+cursor, nil)
	wantStatus(t, r, 200, "")
	if !strings.Contains(string(r.Body), pubkey.NPub(bulkKey(n))) {
		t.Errorf("the delta since the first page lacks the ban made while paging: %.300s", r.Body)
	}
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys?after=XYZ", nil), 400, "invalid_after")
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys?limit=10001", nil), 400, "invalid_limit")
}

// TestFollowerTakesTheListInBatches: a follower's first sync of a long
// list fetches it in pages and writes it in batches, each audited once.
// (Before, each of its bans was a transaction and an audit entry of its own.)
// Its pages hold 32,768 bans (over badger's value threshold; banlist's
// maxPage), more than a primary's page of 10,000: 40,000 bans are two.
func TestFollowerTakesTheListInBatches(t *testing.T) {
	t.Parallel()
	primary := newEnv(t, options{})
	const n = 40_000
	for lo := 0; lo < n; lo += banlist.MaxBatch {
		wantStatus(t, primary.api.Do("POST", "/admin/bans", ndjson(lo, min(banlist.MaxBatch, n-lo), ""),
			"Authorization", "Bearer "+adminKey, "Content-Type", "application/x-ndjson"), 200, "")
	}
	f := newEnv(t, options{follow: primary.srv.URL + "/banlist"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.svc.Follow(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testkit.WaitFor(t, 30*time.Second, "the follower to hold the primary's list", func() bool {
		return f.svc.List().ActiveBans(f.clock.Now().Unix()) == n
	})
	audit := f.api.Do("GET", "/admin/audit?limit=100", nil, bearer(adminKey)...).Map(t)["audit"].([]any)
	if len(audit) != 2 {
		t.Errorf("%d audit entries for %d mirrored bans, want 2 batches", len(audit), n)
	}
}

// TestBlockedStream: Accept: application/x-ndjson (or ?format=ndjson)
// streams every active ban in order of key from ?after= on, between a line
// of its issuer and an end line that counts them, and its cursor gives
// what changed while it streamed, as the first page's does.
func TestBlockedStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	const n = 2500 // more than a page of the stream
	wantStatus(t, e.api.Do("POST", "/admin/bans", ndjson(0, n, ""), "Authorization", "Bearer "+adminKey, "Content-Type", "application/x-ndjson"), 200, "")
	wantStatus(t, e.api.Do("POST", "/admin/unban", map[string]any{"pubkey": bulkKey(7)}, bearer(adminKey)...), 200, "")
	want := make([]string, 0, n)
	for i := range n {
		if i != 7 {
			want = append(want, bulkKey(i))
		}
	}
	slices.Sort(want)

	r := e.api.Do("GET", "/blocked/pubkeys", nil, "Accept", "application/json;q=0.5, application/x-ndjson")
	wantStatus(t, r, 200, "")
	cursor, got := readStream(t, r)
	if !slices.Equal(got, want) {
		t.Fatalf("streamed %d bans, want the %d active in order of key", len(got), len(want))
	}
	r = e.api.Do("GET", "/blocked/pubkeys?format=ndjson&after="+want[99], nil)
	if _, got := readStream(t, r); !slices.Equal(got, want[100:]) {
		t.Errorf("from ?after=: %d bans, want the %d that follow it", len(got), len(want)-100)
	}

	e.clock.Add(time.Second)
	wantStatus(t, e.api.Do("POST", "/admin/ban", map[string]any{"pubkey": bulkKey(n), "reason": "late"}, bearer(adminKey)...), 200, "")
	r = e.api.Do("GET", "/blocked/pubkeys?since="+cursor, nil, "Accept", "application/x-ndjson")
	if wantStatus(t, r, 200, ""); !strings.Contains(string(r.Body), pubkey.NPub(bulkKey(n))) {
		t.Errorf("the delta since the stream's cursor lacks the ban made after it: %.300s", r.Body)
	}
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys?format=ndjson&limit=10", nil), 400, "invalid_limit")
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys?after=XYZ", nil, "Accept", "application/x-ndjson"), 400, "invalid_after")
}

// readStream reads an NDJSON stream of the list: its cursor and its keys
// (hex), failing unless its end line counts them.
func readStream(t *testing.T, r *apitest.Response) (cursor string, keys []string) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type %q: %.200s", ct, r.Body)
	}
	lines := strings.Split(strings.TrimSuffix(string(r.Body), "\n"), "\n")
	var head banlist.Issuer
	var end struct {
		End   bool `json:"end"`
		Count int  `json:"count"`
	}
	if json.Unmarshal([]byte(lines[0]), &head) != nil || head.Cursor == "" {
		t.Fatalf("first line %q: not the issuer", lines[0])
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &end) != nil || !end.End || end.Count != len(lines)-2 {
		t.Fatalf("last line %q: not the end of %d bans", lines[len(lines)-1], len(lines)-2)
	}
	for _, l := range lines[1 : len(lines)-1] {
		var b banlist.BlockedPubKey
		if err := json.Unmarshal([]byte(l), &b); err != nil {
			t.Fatal(err)
		}
		hex, _ := pubkey.ParseForLookup(b.PubKey)
		keys = append(keys, hex)
	}
	return head.Cursor, keys
}

// TestWholeListWrittenOut: a list longer than the cache's bound is
// answered whole, unpaged, written a page at a time: the same answer as
// the cached one, with an ETag that changes with the list (a ban, a lapse)
// and a 304 while it does not.
func TestWholeListWrittenOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	const n = 2100 // more than one page of the writing (1,000)
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, `{"pubkey":"%s","reason":"wave"}`+"\n", bulkKey(i))
	}
	wantStatus(t, e.api.Do("POST", "/admin/bans", body.String(), "Authorization", "Bearer "+adminKey, "Content-Type", "application/x-ndjson"), 200, "")
	wantStatus(t, e.api.Do("POST", "/admin/ban", map[string]any{"pubkey": bulkKey(n), "reason": "brief", "duration": 60}, bearer(adminKey)...), 200, "")

	cached := e.api.Do("GET", "/blocked/pubkeys", nil)
	wantStatus(t, cached, 200, "")
	defer banlistapi.SetCachedListMax(100)()
	whole := e.api.Do("GET", "/blocked/pubkeys", nil)
	wantStatus(t, whole, 200, "")
	if string(whole.Body) != string(cached.Body) {
		t.Fatalf("the answer written out differs from the cached one:\n%.300s\n%.300s", whole.Body, cached.Body)
	}
	var list banlist.BlockedPubKeys
	whole.JSON(t, &list)
	if len(list.PubKeys) != n+1 {
		t.Fatalf("%d keys, want %d", len(list.PubKeys), n+1)
	}
	etag := whole.Header.Get("ETag")
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys", nil, "If-None-Match", etag), 304, "")
	wantStatus(t, e.api.Do("HEAD", "/blocked/pubkeys", nil), 200, "")

	wantStatus(t, e.api.Do("POST", "/admin/ban", map[string]any{"pubkey": bulkKey(n + 1), "reason": "late"}, bearer(adminKey)...), 200, "")
	r := e.api.Do("GET", "/blocked/pubkeys", nil, "If-None-Match", etag)
	wantStatus(t, r, 200, "")
	if r.Header.Get("ETag") == etag {
		t.Fatal("the ETag did not change with a ban")
	}
	etag = r.Header.Get("ETag")
	e.clock.Add(61 * time.Second) // the brief ban lapses
	r = e.api.Do("GET", "/blocked/pubkeys", nil, "If-None-Match", etag)
	wantStatus(t, r, 200, "")
	r.JSON(t, &list)
	if len(list.PubKeys) != n+1 || r.Header.Get("ETag") == etag {
		t.Fatalf("after a lapse: %d keys, want %d, and a new ETag", len(list.PubKeys), n+1)
	}
}

// TestChangesInPages: ?since= with ?limit answers the keys' changes a page
// at a time, in order of key, next naming the ?after= of the page that
// follows; a follower asks for them so and applies every page. (Before,
// the changes since a cursor were one answer however many: a wave of
// 100,000 bans came as one.)
func TestChangesInPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	var sinceAfter atomic.Int64 // requests for a later page of changes
	fr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("since") && q.Has("after") {
			sinceAfter.Add(1)
		}
		httputil.NewSingleHostReverseProxy(mustURL(t, e.srv.URL)).ServeHTTP(w, r)
	}))
	t.Cleanup(fr.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	list, err := policies.SyncBanList(ctx, fr.URL+"/banlist", policies.SyncOptions{Interval: 50 * time.Millisecond, PageSize: 100,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cursor := e.api.Do("GET", "/blocked/pubkeys?limit=1", nil).Map(t)["cursor"].(string)
	const n = 250
	wantStatus(t, e.api.Do("POST", "/admin/bans", ndjson(0, n, ""), "Authorization", "Bearer "+adminKey, "Content-Type", "application/x-ndjson"), 200, "")
	wantStatus(t, e.api.Do("POST", "/admin/unban", map[string]any{"pubkey": bulkKey(7)}, bearer(adminKey)...), 200, "")

	seen, after, pages := map[string]bool{}, "", 0
	for ; ; pages++ {
		path := "/blocked/pubkeys?since=" + cursor + "&limit=100"
		if after != "" {
			path += "&after=" + after
		}
		r := e.api.Do("GET", path, nil)
		wantStatus(t, r, 200, "")
		var page struct {
			Added, Lifted []banlist.BlockedPubKey
			Next          string
		}
		r.JSON(t, &page)
		if len(page.Added)+len(page.Lifted) > 100 {
			t.Fatalf("page %d: %d changes, over its limit of 100", pages, len(page.Added)+len(page.Lifted))
		}
		for _, b := range append(page.Added, page.Lifted...) {
			hex, _ := pubkey.ParseForLookup(b.PubKey)
			if seen[hex] || hex <= after {
				t.Fatalf("page %d: %s again or out of order", pages, hex)
			}
			seen[hex] = true
		}
		if page.Next == "" {
			break
		}
		after = page.Next
		if pages > 3 {
			t.Fatal("the pages do not end")
		}
	}
	if len(seen) != n || pages != 2 {
		t.Fatalf("%d keys changed in %d pages, want %d in 3", len(seen), pages+1, n)
	}

	testkit.WaitFor(t, 10*time.Second, "the follower to apply every page of the changes", func() bool {
		_, lifted := list.Banned(bulkKey(7), e.clock.Now().Unix())
		return list.ActiveBans(e.clock.Now().Unix()) == n-1 && !lifted
	})
	if sinceAfter.Load() < 2 {
		t.Fatalf("the follower asked for %d later pages of changes, want the changes of %d keys in pages of 100", sinceAfter.Load(), n)
	}
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys?since="+cursor+"&after=XYZ", nil), 400, "invalid_after")
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys?since="+cursor+"&limit=0", nil), 400, "invalid_limit")
}
