package banlistapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/policies"
)

// TestChangesSince: ?since=<cursor> answers what changed after the answer
// that gave the cursor: bans added, lifted and lapsed, words added and
// removed; each answer's shape is checked against openapi.json.
func TestChangesSince(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	api := e.api
	mod := bearer(adminKey)
	cursorOf := func(path string) string {
		t.Helper()
		r := api.Do("GET", path, nil)
		wantStatus(t, r, 200, "")
		c, _ := r.Map(t)["cursor"].(string)
		if c == "" {
			t.Fatalf("%s: no cursor in %s", path, r.Body)
		}
		return c
	}
	changes := func(path, cursor string) map[string]any {
		t.Helper()
		r := api.Do("GET", path+"?since="+cursor, nil)
		wantStatus(t, r, 200, "")
		return r.Map(t)
	}
	npubs := func(list any) []string {
		var out []string
		for _, x := range list.([]any) {
			out = append(out, x.(map[string]any)["pubkey"].(string))
		}
		return out
	}
	c0, w0 := cursorOf("/blocked/pubkeys"), cursorOf("/blocked/words")

	e.clock.Add(time.Minute)
	_, aHex, aNpub := newKey()
	_, bHex, bNpub := newKey()
	wantStatus(t, api.Do("POST", "/admin/ban", map[string]any{"pubkey": aHex, "reason": "spam"}, mod...), 200, "")
	exp := e.clock.Now().Unix() + 10
	wantStatus(t, api.Do("POST", "/admin/temp-ban", map[string]any{"pubkey": bHex, "reason": "flood", "expires_at": exp}, mod...), 200, "")
	wantStatus(t, api.Do("POST", "/admin/words", map[string]any{"word": "Buy Now"}, mod...), 201, "")
	d := changes("/blocked/pubkeys", c0)
	if got := npubs(d["added"]); len(got) != 2 || !(got[0] == aNpub || got[1] == aNpub) || !(got[0] == bNpub || got[1] == bNpub) {
		t.Fatalf("added = %v", d)
	}
	if len(d["lifted"].([]any)) != 0 || len(d["expired"].([]any)) != 0 {
		t.Fatalf("changes = %v", d)
	}
	if w := changes("/blocked/words", w0); len(w["added"].([]any)) != 1 || w["added"].([]any)[0] != "Buy Now" {
		t.Fatalf("word changes = %v", w)
	}
	c1, w1 := d["cursor"].(string), changes("/blocked/words", w0)["cursor"].(string)

	e.clock.Add(30 * time.Second) // b's ban lapses
	wantStatus(t, api.Do("POST", "/admin/unban", map[string]any{"pubkey": aNpub}, mod...), 200, "")
	wantStatus(t, api.Do("DELETE", "/admin/words/buy%20now", nil, mod...), 200, "")
	d = changes("/blocked/pubkeys", c1)
	if len(d["added"].([]any)) != 0 || npubs(d["lifted"])[0] != aNpub || len(d["lifted"].([]any)) != 1 ||
		len(d["expired"].([]any)) != 1 || npubs(d["expired"])[0] != bNpub {
		t.Fatalf("changes after an unban and a lapse = %v", d)
	}
	if got := d["expired"].([]any)[0].(map[string]any)["expires_at"]; got != float64(exp) {
		t.Fatalf("expired entry = %v", got)
	}
	if w := changes("/blocked/words", w1); len(w["removed"].([]any)) != 1 || w["removed"].([]any)[0] != "buy now" {
		t.Fatalf("word changes = %v", w)
	}

	e.clock.Add(time.Minute)
	c2 := changes("/blocked/pubkeys", c1)["cursor"].(string)
	e.clock.Add(time.Minute)
	if d := changes("/blocked/pubkeys", c2); len(d["added"].([]any))+len(d["lifted"].([]any))+len(d["expired"].([]any)) != 0 {
		t.Fatalf("nothing changed, yet %v", d)
	}

	for _, bad := range []string{"yesterday", "-1", "1.", ".ab", ""} {
		wantStatus(t, api.Do("GET", "/blocked/pubkeys?since="+bad, nil), 400, "invalid_cursor")
	}
	before := strconv.FormatInt(e.clock.Now().Add(-time.Hour).UnixMilli(), 10)
	wantStatus(t, api.Do("GET", "/blocked/words?since="+before, nil), 410, "cursor_expired")

	// A bare time (an older outpost's cursor) is taken; a cursor of another
	// epoch is not: another server (or this one before a restore) issued it,
	// and the changes since its time would miss this server's earlier bans.
	ms, _, _ := strings.Cut(c2, ".")
	wantStatus(t, api.Do("GET", "/blocked/pubkeys?since="+ms, nil), 200, "")
	other := newEnv(t, options{})
	foreign := other.api.Do("GET", "/blocked/pubkeys", nil).Map(t)["cursor"].(string) // not older than e's start
	for _, path := range []string{"/blocked/pubkeys", "/blocked/words"} {
		wantStatus(t, api.Do("GET", path+"?since="+foreign, nil), 410, "cursor_expired")
	}
}

// TestRemoteSyncFollowsChanges: after its first fetch, SyncBanList asks
// only for changes (?since=), and bans, unbans and words reach it.
func TestRemoteSyncFollowsChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	var mu sync.Mutex
	var full, deltas int
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.URL.Query().Has("since") {
			deltas++
		} else {
			full++
		}
		mu.Unlock()
		httputil.NewSingleHostReverseProxy(mustURL(t, e.srv.URL)).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, aHex, aNpub := newKey()
	wantStatus(t, e.api.Do("POST", "/admin/ban", map[string]any{"pubkey": aNpub, "reason": "old"}, bearer(adminKey)...), 200, "")
	remote, err := policies.SyncBanList(ctx, front.URL+"/banlist", policies.SyncOptions{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := remote.Banned(aHex, time.Now().Unix()); !ok {
		t.Fatal("the first fetch missed a ban")
	}
	e.clock.Add(time.Minute)
	_, bHex, bNpub := newKey()
	wantStatus(t, e.api.Do("POST", "/admin/ban", map[string]any{"pubkey": bNpub, "reason": "new"}, bearer(adminKey)...), 200, "")
	wantStatus(t, e.api.Do("POST", "/admin/unban", map[string]any{"pubkey": aNpub}, bearer(adminKey)...), 200, "")
	wantStatus(t, e.api.Do("POST", "/admin/words", map[string]any{"word": "scam"}, bearer(adminKey)...), 201, "")
	testkit.WaitFor(t, 10*time.Second, "the changes to reach the follower", func() bool {
		_, a := remote.Banned(aHex, time.Now().Unix())
		_, b := remote.Banned(bHex, time.Now().Unix())
		_, w := remote.BlockedWord("a scam")
		return !a && b && w
	})
	mu.Lock()
	defer mu.Unlock()
	if full != 2 || deltas == 0 {
		t.Fatalf("%d full fetches and %d delta polls; want the 2 first fetches only, then deltas", full, deltas)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
