package banlistapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/policies"
)

// A follower mirrors its primary's bans (temporary ones with their
// expiry) and blocked words by their changes, serves them from its own
// store, and refuses changes to them with 409 naming the primary, over
// REST and NIP-86 alike.
func TestFollowPrimary(t *testing.T) {
	t.Parallel()
	primary := newEnv(t, options{})
	_, a, aNpub := newKey()
	_, b, _ := newKey()
	wantStatus(t, primary.api.Do("POST", "/admin/ban", map[string]any{"pubkey": a, "reason": "spam"}, bearer(adminKey)...), 200, "")
	wantStatus(t, primary.api.Do("POST", "/admin/temp-ban", map[string]any{"pubkey": b, "reason": "cool off", "expires_at": primary.clock.Now().Unix() + 3600}, bearer(adminKey)...), 200, "")
	wantStatus(t, primary.api.Do("POST", "/admin/words", map[string]any{"word": "scam"}, bearer(adminKey)...), 201, "")

	url := primary.srv.URL + "/banlist"
	f := newEnv(t, options{follow: url})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.svc.Follow(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	wantB, _ := primary.svc.Status(b)
	testkit.WaitFor(t, 10*time.Second, "the follower to mirror the primary", func() bool {
		_, okA := f.svc.Status(a)
		gotB, okB := f.svc.Status(b)
		_, word := f.svc.List().BlockedWord("a scam")
		return okA && okB && gotB.ExpiresAt == wantB.ExpiresAt && word
	})
	if r := f.api.Do("GET", "/blocked/pubkeys/"+aNpub, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"blocked":true`) {
		t.Fatalf("read on the follower: %d %s", r.Status, r.Body)
	}

	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/admin/ban", map[string]any{"pubkey": a, "reason": "x"}},
		{"POST", "/admin/temp-ban", map[string]any{"pubkey": a, "reason": "x", "expires_at": f.clock.Now().Unix() + 60}},
		{"POST", "/admin/unban", map[string]any{"pubkey": a}},
		{"POST", "/admin/words", map[string]any{"word": "other"}},
		{"DELETE", "/admin/words/scam", nil},
	} {
		r := f.api.Do(w.method, w.path, w.body, bearer(adminKey)...)
		wantStatus(t, r, http.StatusConflict, "read_only")
		if d, _ := r.Map(t)["details"].(map[string]any); d["primary"] != url {
			t.Fatalf("%s %s: %s does not name the primary", w.method, w.path, r.Body)
		}
	}
	err := f.svc.Management().BanPubKey(context.Background(), "nip86:admin", b, "x")
	if e := outpost.AsError(err); e == nil || e.Kind != outpost.Conflict || e.Details["primary"] != url {
		t.Fatalf("NIP-86 ban on the follower: %v", err)
	}
	// Lists that are this node's own stay writable.
	wantStatus(t, f.api.Do("POST", "/admin/block-ip", map[string]any{"ip": "203.0.113.7", "reason": "flood"}, bearer(adminKey)...), 200, "")

	// Changes on the primary arrive as changes.
	wantStatus(t, primary.api.Do("POST", "/admin/unban", map[string]any{"pubkey": a}, bearer(adminKey)...), 200, "")
	wantStatus(t, primary.api.Do("DELETE", "/admin/words/scam", nil, bearer(adminKey)...), 200, "")
	testkit.WaitFor(t, 10*time.Second, "the follower to mirror the unban", func() bool {
		_, okA := f.svc.Status(a)
		_, word := f.svc.List().BlockedWord("a scam")
		return !okA && !word
	})
	// Every change was applied once: one audit entry each, by the mirror,
	// the first sync's two bans one batch.
	audit, err := f.svc.Audit(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range audit {
		if e.Actor == "follow:"+url {
			actions = append(actions, e.Action)
		}
	}
	if len(actions) != 4 || actions[3] != "ban.batch" {
		t.Fatalf("the mirror made %d changes, want 4 (a batch of two bans, a word, an unban, a word removed): %v", len(actions), actions)
	}

	// With the primary gone, the follower keeps and serves what it has.
	primary.srv.Close()
	if r := f.api.Do("GET", "/blocked/pubkeys/"+b, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"blocked":true`) {
		t.Fatalf("read with the primary down: %d %s", r.Status, r.Body)
	}
}

func TestFollowSetting(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"ftp://x", "https://u:p@x/banlist", "https://x/banlist?a=1", "x"} {
		if (&banlist.Settings{Follow: s}).Valid() == nil {
			t.Errorf("%s accepted", s)
		}
	}
	if err := (&banlist.Settings{Follow: "https://primary.example/banlist"}).Valid(); err != nil {
		t.Error(err)
	}
}

// front is what a follower's URL reaches: a proxy to a primary, which the
// test may swap for another server or for an answer of its own.
type front struct {
	srv    *httptest.Server
	target atomic.Pointer[http.Handler]
}

func newFront(t *testing.T, to string) *front {
	f := &front{}
	f.to(t, to)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*f.target.Load()).ServeHTTP(w, r) }))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *front) to(t *testing.T, url string) {
	var h http.Handler = httputil.NewSingleHostReverseProxy(mustURL(t, url))
	f.target.Store(&h)
}

func (f *front) answer(h http.HandlerFunc) {
	var hh http.Handler = h
	f.target.Store(&hh)
}

func follow(t *testing.T, f *env) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.svc.Follow(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Every answer of the public lists, whole or changes, names its issuer:
// the service key and the data's epoch.
func TestAnswersNameTheirIssuer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	id := e.svc.Identity()
	if len(id.Epoch) != 32 || id.PubKey != e.svc.PubKey() {
		t.Fatalf("identity %+v", id)
	}
	for _, path := range []string{"/blocked/pubkeys", "/blocked/words"} {
		r := e.api.Do("GET", path, nil)
		wantStatus(t, r, 200, "")
		m := r.Map(t)
		if m["service_pubkey"] != id.PubKey || m["epoch"] != id.Epoch {
			t.Fatalf("%s: %s", path, r.Body)
		}
		r = e.api.Do("GET", path+"?since="+m["cursor"].(string), nil)
		wantStatus(t, r, 200, "")
		if m := r.Map(t); m["service_pubkey"] != id.PubKey || m["epoch"] != id.Epoch {
			t.Fatalf("%s?since: %s", path, r.Body)
		}
	}
}

// A follower whose primary's URL is answered by another outpost (a node
// promoted behind the same name, running since before the follower's
// cursor) takes the new primary's whole list: the old primary's bans go,
// the new one's earlier bans come, then its changes. (Before, it asked the
// new server for the changes since the old one's cursor: it kept the stale
// bans and missed the earlier one, until a restart.)
func TestFollowerMeetsAnotherPrimary(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t, options{}), newEnv(t, options{})
	_, early, _ := newKey()
	wantStatus(t, b.api.Do("POST", "/admin/ban", map[string]any{"pubkey": early, "reason": "made on b first"}, bearer(adminKey)...), 200, "")
	a.clock.Add(time.Minute) // a's cursors are later than b's early ban
	_, stale1, _ := newKey()
	_, stale2, _ := newKey()
	for _, pk := range []string{stale1, stale2} {
		wantStatus(t, a.api.Do("POST", "/admin/ban", map[string]any{"pubkey": pk, "reason": "a's"}, bearer(adminKey)...), 200, "")
	}
	fr := newFront(t, a.srv.URL)
	f := newEnv(t, options{follow: fr.srv.URL + "/banlist"})
	follow(t, f)
	testkit.WaitFor(t, 10*time.Second, "a's bans on the follower", func() bool {
		_, ok1 := f.svc.Status(stale1)
		_, ok2 := f.svc.Status(stale2)
		return ok1 && ok2
	})

	fr.to(t, b.srv.URL)
	b.clock.Add(2 * time.Minute)
	_, later, _ := newKey()
	wantStatus(t, b.api.Do("POST", "/admin/ban", map[string]any{"pubkey": later, "reason": "made on b later"}, bearer(adminKey)...), 200, "")
	testkit.WaitFor(t, 10*time.Second, "b's list on the follower", func() bool {
		_, okEarly := f.svc.Status(early)
		_, okLater := f.svc.Status(later)
		_, okStale1 := f.svc.Status(stale1)
		_, okStale2 := f.svc.Status(stale2) // the whole list is applied in batches: wait for all of it
		return okEarly && okLater && !okStale1 && !okStale2
	})
	h := f.svc.Health(context.Background())
	if c := h.Checks.Following; c == nil || c.PrimaryPubKey != b.svc.PubKey() || c.PrimaryEpoch != b.svc.Identity().Epoch {
		t.Fatalf("the health does not name the primary answering: %+v", c)
	}
}

// A follower whose primary answers garbage, or nothing, for longer than
// policies.FailAfter says so in its /health and the root /health
// (degraded, with the reason and since when); once the primary answers
// again it is ok again.
func TestFollowerHealth(t *testing.T) {
	t.Parallel()
	p := newEnv(t, options{})
	fr := newFront(t, p.srv.URL)
	f := newEnv(t, options{follow: fr.srv.URL + "/banlist"})
	follow(t, f)
	following := func() *banlist.FollowCheck { return f.svc.Health(context.Background()).Checks.Following }
	testkit.WaitFor(t, 10*time.Second, "a first sync", func() bool { return following().LastSync != nil })
	wantStatus(t, f.api.Do("GET", "/health", nil), 200, "")
	if m := f.api.Do("GET", "/health", nil).Map(t); m["status"] != "ok" {
		t.Fatalf("health while in sync: %v", m)
	}

	for name, garbage := range map[string]http.HandlerFunc{
		"not a ban list": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"hello":"world"}`)) },
		"an error":       func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad gateway", http.StatusBadGateway) },
	} {
		fr.answer(garbage)
		testkit.WaitFor(t, 20*time.Second, "a failed sync ("+name+")", func() bool { return following().FailingSince != nil })
		if m := f.api.Do("GET", "/health", nil).Map(t); m["status"] != "ok" {
			t.Fatalf("degraded before FailAfter: %v", m)
		}
		f.clock.Add(policies.FailAfter + time.Second)
		r := f.api.Do("GET", "/health", nil)
		m := r.Map(t)
		c, _ := m["checks"].(map[string]any)["following"].(map[string]any)
		if m["status"] != "degraded" || !strings.Contains(m["reason"].(string), "since") || c["failing_since"] == nil || c["error"] == nil {
			t.Fatalf("%s: health %s", name, r.Body)
		}
		if root := rootHealth(t, f.srv.URL); root.Status != "degraded" || !strings.Contains(root.Reason, "banlist is degraded") {
			t.Fatalf("%s: the root health is %+v", name, root)
		}
		fr.to(t, p.srv.URL)
		testkit.WaitFor(t, 30*time.Second, "the health to recover ("+name+")", func() bool {
			return f.svc.Health(context.Background()).Status == "ok"
		})
	}
}

func rootHealth(t *testing.T, base string) httpapi.RootHealth {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h httpapi.RootHealth
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}
