package mintdirapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/mintdirapi"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

type env struct {
	srv   *httptest.Server
	api   *apitest.Client
	dir   *mintdir.Directory
	ctx   context.Context
	nostr *nostr.Relay
}

// newEnv serves the relay and the directory on one listener, as outpost
// does, with the directory's background work running.
func newEnv(t *testing.T, allowPrivate bool, submitPerHour int) *env {
	t.Helper()
	return newEnvLimited(t, allowPrivate, submitPerHour, nil)
}

// newEnvLimited is newEnv with the program-wide per-client limit, and
// other monitors followed.
func newEnvLimited(t *testing.T, allowPrivate bool, submitPerHour int, limit *ratelimit.Limiter, monitors ...string) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(t, storetest.Options{Log: log})
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: log, PublicURL: base, ServicePub: pk, Name: "test"})
	dir := mintdir.New(mintdir.Config{DB: st.DB, Events: st.Events, Log: log,
		Settings: mintdir.Settings{ProbeInterval: time.Hour, ProbeTimeout: 2 * time.Second, AllowPrivate: allowPrivate, Monitors: monitors}})
	rl.RejectEvent = append(rl.RejectEvent, mintdir.RejectInvalidNIP87)
	rl.OnEventSaved = append(rl.OnEventSaved, dir.OnEventSaved)
	follows := wotOn(t, st, rl) // for ?viewer=
	cfg := mintdirapi.Config{Directory: dir, Log: log, Settings: mintdirapi.Settings{SubmitPerHour: submitPerHour}, Follows: follows}
	srv.Config.Handler = httpapi.New(httpapi.Config{Relay: rl, Log: log, RateLimit: limit, Services: []httpapi.Service{{
		Name: "mintdir", Mount: "/mintdir", Routes: mintdirapi.Routes(cfg), Health: httpapi.ReportHealth(dir.Health)}}})
	srv.Config.ConnState = rl.TrackConn
	srv.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	jobs := make(chan struct{})
	go func() { dir.Run(ctx); close(jobs) }()
	e := &env{srv: srv, dir: dir, ctx: ctx, api: apitest.New(t, srv.URL+"/mintdir", mintdirapi.OpenAPI())}
	var proxy *relaytest.Proxy
	t.Cleanup(func() {
		if proxy != nil {
			proxy.Freeze()
		}
		shCtx, shCancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer shCancel()
		srv.Close()
		rl.CloseClients(shCtx)
		cancel()
		<-jobs
	})
	e.nostr, proxy = relaytest.Dial(t, srv.URL)
	return e
}

func wantStatus(t *testing.T, r *apitest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || (code != "" && r.ErrorCode() != code) {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

// mintPaths are the per-mint resources of the seed.
var mintPaths = []string{"", "/urls", "/metadata", "/metadata/history", "/status", "/uptime", "/uptime/timeseries",
	"/incidents", "/trust", "/reviews", "/views", "/features", "/audits"}

// getAll fetches every resource of a mint in all four forms (by id, by URL,
// and both under /v1) and fails unless the four answers are identical.
func (e *env) getAll(t *testing.T, id, mintURL string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, p := range mintPaths {
		q := url.Values{"url": {mintURL}}
		forms := []string{"/mints/" + id + p, "/mints/by-url" + p + "?" + q.Encode(), "/v1/mints/" + id + p, "/v1/mints/by-url" + p + "?" + q.Encode()}
		var first []byte
		for _, f := range forms {
			r := e.api.Do("GET", f, nil)
			wantStatus(t, r, 200, "")
			body := r.Body
			switch p {
			case "/trust", "", "/views":
				body = dropVolatile(t, r)
			case "/incidents":
				body = dropOpenDurations(t, r)
			}
			if first == nil {
				first = body
				out[p] = r.Map(t)
			} else if !bytes.Equal(first, body) {
				t.Fatalf("%s differs from %s:\n%s\n%s", f, forms[0], body, first)
			}
		}
	}
	return out
}

// dropVolatile removes the view counts that reading the core record moves.
func dropVolatile(t *testing.T, r *apitest.Response) []byte {
	m := r.Map(t)
	for _, k := range []string{"views_24h", "views_7d", "views_30d", "unique_sessions_30d", "view_velocity"} {
		delete(m, k)
	}
	return []byte(fmt.Sprint(m))
}

// dropOpenDurations removes the duration of each incident still open: it
// grows with the clock, so two reads a second apart differ.
func dropOpenDurations(t *testing.T, r *apitest.Response) []byte {
	m := r.Map(t)
	incidents, _ := m["incidents"].([]any)
	for _, i := range incidents {
		if inc, ok := i.(map[string]any); ok && inc["resolved_at"] == nil {
			delete(inc, "duration_seconds")
		}
	}
	return []byte(fmt.Sprint(m))
}

// TestVantages: two followed monitors publish their status events to the
// relay; the status lists them (all four forms alike, every answer valid by
// the document), their majority makes the mint offline, and the incident
// names them.
func TestVantages(t *testing.T) {
	t.Parallel()
	a, b := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	aPK, _ := nostr.GetPublicKey(a)
	bPK, _ := nostr.GetPublicKey(b)
	e := newEnvLimited(t, true, 100, nil, aPK, bPK)
	mint := startMint(t, t.TempDir(), "")
	id := e.api.Do("POST", "/mints/submit", map[string]string{"mint_url": mint.URL}).Map(t)["mint_id"].(string)
	testkit.WaitFor(t, 15*time.Second, "the first check", func() bool {
		return e.api.Do("GET", "/mints/"+id+"/status", nil).Map(t)["status"] == "online"
	})
	for _, sk := range []string{a, b} {
		if err := relaytest.Publish(t, e.nostr, *mintdirtest.StatusEvent(sk, mint.URL, "offline", time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "offline by consensus", func() bool {
		return e.api.Do("GET", "/mints/"+id+"/status", nil).Map(t)["status"] == "offline"
	})
	all := e.getAll(t, id, mint.URL)
	vs := all["/status"]["vantages"].([]any)
	if len(vs) != 3 || vs[0].(map[string]any)["self"] != true || vs[0].(map[string]any)["status"] != "online" {
		t.Fatalf("vantages: %v", vs)
	}
	for i, pk := range []string{aPK, bPK} {
		v := vs[i+1].(map[string]any)
		if v["monitor"] != pubkey.NPub(pk) || v["self"] != false || v["status"] != "offline" || v["offline_since"] == nil || v["last_checked_at"] == nil {
			t.Fatalf("vantage %d: %v", i+1, v)
		}
	}
	incs := all["/incidents"]["incidents"].([]any)
	if len(incs) != 1 || fmt.Sprint(incs[0].(map[string]any)["seen_by"]) != fmt.Sprint([]any{pubkey.NPub(aPK), pubkey.NPub(bPK)}) {
		t.Fatalf("incidents: %v", incs)
	}
}

func startMint(t *testing.T, dir, addr string) *devmint.Mint {
	t.Helper()
	return minttest.Start(t, devmint.Options{Dir: dir, Addr: addr, Name: "API Test Mint", Description: "a real gonuts mint",
		LongDescription: "in-process, on 127.0.0.1", Motd: "hello wallets"})
}

// TestAgainstARealMint walks every endpoint against a real gonuts mint: it
// is submitted, checked, stopped (offline, an open incident) and started
// again (the incident closes with a severity). Every response is validated
// against openapi.json.
func TestAgainstARealMint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, 100)
	api := e.api
	mintDir := t.TempDir()
	// The mint takes a free port itself (a port found free and closed for
	// it could be taken meanwhile); it starts again on the same one.
	mint := startMint(t, mintDir, "")
	addr := strings.TrimPrefix(mint.URL, "http://")
	var id string

	t.Run("submit", func(t *testing.T) {
		r := api.Do("POST", "/mints/submit", map[string]string{"mint_url": mint.URL + "/"})
		wantStatus(t, r, 202, "")
		res := r.Map(t)
		id = res["mint_id"].(string)
		if res["status"] != "queued" {
			t.Fatalf("submit: %s", r.Body)
		}
		r = api.Do("POST", "/v1/mints/submit", map[string]string{"mint_url": strings.ToUpper(mint.URL)})
		wantStatus(t, r, 200, "")
		if m := r.Map(t); m["mint_id"] != id || m["status"] != "exists" {
			t.Fatalf("resubmit: %s", r.Body)
		}
		for _, body := range []any{map[string]string{"mint_url": "ftp://x"}, map[string]string{}, map[string]int{"mint_url": 3}, "not json", "http://x.onion"} {
			if s, ok := body.(string); ok && strings.HasPrefix(s, "http") {
				body = map[string]string{"mint_url": s}
			}
			r := api.Do("POST", "/mints/submit", body)
			wantStatus(t, r, 400, "")
		}
		wantStatus(t, api.Do("POST", "/mints/submit", strings.Repeat("x", 70<<10)), 413, "request_too_large")
		// The first check runs at once, without waiting for the interval.
		testkit.WaitFor(t, 15*time.Second, "the first check", func() bool {
			return api.Do("GET", "/mints/"+id+"/status", nil).Map(t)["status"] == "online"
		})
	})

	t.Run("resources reflect the mint", func(t *testing.T) {
		all := e.getAll(t, id, mint.URL)
		core := all[""]
		if core["mint_id"] != id || core["canonical_url"] != mint.URL || core["name"] != "API Test Mint" || core["status"] != "online" ||
			core["uptime_24h"] != 100.0 || core["offline_since"] != nil || core["last_success_at"] == nil || core["trust_level"] != "unknown" {
			t.Fatalf("core = %v", core)
		}
		meta := all["/metadata"]
		pub, _ := meta["pubkey"].(string)
		if meta["name"] != "API Test Mint" || len(pub) != 66 || !strings.HasPrefix(meta["version"].(string), "gonuts/") ||
			meta["description"] != "a real gonuts mint" || meta["motd"] != "hello wallets" || meta["last_fetched_at"] == nil {
			t.Fatalf("metadata = %v", meta)
		}
		nuts := meta["nuts"].(map[string]any)
		for _, n := range []string{"4", "5", "7", "17"} {
			if nuts[n] == nil {
				t.Errorf("nut %s missing from %v", n, nuts)
			}
		}
		if ks := meta["keysets"].([]any); len(ks) == 0 || ks[0].(map[string]any)["unit"] != "sat" {
			t.Errorf("keysets = %v", meta["keysets"])
		}
		f := all["/features"]
		if f["supports_bolt11"] != true || f["has_tor_endpoint"] != false || fmt.Sprint(f["supported_nuts"]) != "[4 5 7 9 10 11 12 14 17]" ||
			f["feature_completeness_score"].(float64) <= 0.5 {
			t.Fatalf("features = %v", f)
		}
		urls := all["/urls"]["urls"].([]any)
		if u := urls[0].(map[string]any); len(urls) != 1 || u["url"] != mint.URL || u["type"] != "clearnet" || u["active"] != true {
			t.Fatalf("urls = %v", urls)
		}
		if u := all["/uptime"]; u["window"] != "24h" || u["total_checks"].(float64) < 1 || u["ok_checks"] != u["total_checks"] || u["uptime_pct"] != 100.0 || u["avg_rtt_ms"] == nil {
			t.Fatalf("uptime = %v", u)
		}
		if s := all["/status"]; s["status"] != "online" || s["current_rtt_ms"] == nil || s["last_error"] != nil {
			t.Fatalf("status = %v", s)
		}
		// A series is paged like every list: 50 points, newest first, and
		// ?before= the last one's time gives the next 50.
		pts := all["/uptime/timeseries"]["points"].([]any)
		if len(pts) != 50 || pts[0].(map[string]any)["state"] != "online" || pts[49].(map[string]any)["state"] != "unknown" {
			t.Fatalf("timeseries: %d points, first %v", len(pts), pts[0])
		}
		last := pts[49].(map[string]any)["timestamp"].(string)
		next := api.Do("GET", "/mints/"+id+"/uptime/timeseries?before="+last+"&limit=500", nil).Map(t)["points"].([]any)
		if len(next) != 289-50 || next[0].(map[string]any)["timestamp"].(string) >= last {
			t.Fatalf("the next page: %d points starting %v, want %d before %s", len(next), next[0], 289-50, last)
		}
		if h := all["/metadata/history"]["history"].([]any); len(h) != 1 || h[0].(map[string]any)["change_type"] != "initial" {
			t.Fatalf("history = %v", h)
		}
		if tr := all["/trust"]; tr["score_level"] != "unknown" || tr["score_total"] != core["trust_score"] {
			t.Fatalf("trust = %v (core %v)", tr, core["trust_score"])
		}
	})

	t.Run("a stopped mint goes offline; back up, the incident closes", func(t *testing.T) {
		mint.Close()
		for range 3 {
			e.dir.ProbeAll(e.ctx)
		}
		st := api.Do("GET", "/mints/"+id+"/status", nil).Map(t)
		if st["status"] != "offline" || st["offline_since"] == nil || st["last_error"] != "connection_refused" || st["current_rtt_ms"] != nil {
			t.Fatalf("status after stopping = %v", st)
		}
		incs := api.Do("GET", "/mints/"+id+"/incidents", nil).Map(t)["incidents"].([]any)
		if len(incs) != 1 || incs[0].(map[string]any)["resolved_at"] != nil || incs[0].(map[string]any)["severity"] != "minor" {
			t.Fatalf("incidents = %v", incs)
		}
		mint = startMint(t, mintDir, addr)
		e.dir.ProbeAll(e.ctx)
		all := e.getAll(t, id, mint.URL)
		if all["/status"]["status"] != "online" || all[""]["last_failure_at"] == nil || all[""]["incidents_7d"] != 1.0 {
			t.Fatalf("after restart: %v / %v", all["/status"], all[""])
		}
		inc := all["/incidents"]["incidents"].([]any)[0].(map[string]any)
		if inc["resolved_at"] == nil || inc["severity"] != "minor" || inc["duration_seconds"].(float64) < 0 {
			t.Fatalf("resolved incident = %v", inc)
		}
		if u := all["/uptime"]; u["ok_checks"].(float64) != u["total_checks"].(float64)-3 || u["p95_rtt_ms"] == nil {
			t.Fatalf("uptime = %v", u)
		}
	})

	t.Run("reviews over the relay", func(t *testing.T) {
		meta := api.Do("GET", "/mints/"+id+"/metadata", nil).Map(t)
		mintPub := meta["pubkey"].(string)
		k := nostr.Tag{"k", "38172"}
		alice, bob, carol := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
		alicePub, _ := nostr.GetPublicKey(alice)
		pub := func(sk, content string, tags ...nostr.Tag) error {
			return relaytest.Publish(t, e.nostr, relaytest.Sign(t, sk, 38000, content, tags...))
		}
		old := relaytest.Sign(t, alice, 38000, "[1/5] was bad", k, nostr.Tag{"d", "first"}, nostr.Tag{"u", mint.URL})
		old.CreatedAt -= 100
		old.Sign(alice)
		for _, err := range []error{
			relaytest.Publish(t, e.nostr, old),
			pub(alice, "[4/5] much better now", k, nostr.Tag{"d", mintPub}),
			pub(bob, "just works", k, nostr.Tag{"d", mintPub}, nostr.Tag{"u", mint.URL + "/"}),
			pub(carol, "fast mint", k, nostr.Tag{"d", "x"}, nostr.Tag{"u", mint.URL}, nostr.Tag{"rating", "2"}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, bad := range [][]nostr.Tag{
			{k, {"d", mintPub}, {"rating", "9"}},
			{k, {"d", "nothing"}},
			{k, {"d", mintPub}, {"u", "not a url"}},
		} {
			err := pub(bob, "bad", bad...)
			if err == nil || !strings.Contains(err.Error(), "invalid:") {
				t.Fatalf("malformed review %v: %v", bad, err)
			}
		}
		var rv map[string]any
		testkit.WaitFor(t, 15*time.Second, "reviews", func() bool {
			rv = api.Do("GET", "/mints/"+id+"/reviews", nil).Map(t)
			return len(rv["reviews"].([]any)) == 3
		})
		sum := rv["summary"].(map[string]any)
		if sum["count"] != 3.0 || sum["rated_count"] != 2.0 || sum["average_rating"] != 3.0 {
			t.Fatalf("summary = %v", sum)
		}
		newest := rv["reviews"].([]any)[0].(map[string]any)
		byAuthor := map[string]map[string]any{}
		for _, r := range rv["reviews"].([]any) {
			byAuthor[r.(map[string]any)["pubkey"].(string)] = r.(map[string]any)
		}
		a := byAuthor[pubkey.NPub(alicePub)]
		if a["content"] != "much better now" || a["rating"] != 4.0 || newest["created_at"] == nil {
			t.Fatalf("alice's newest review = %v", a)
		}
		for _, r := range byAuthor {
			if r["content"] == "just works" && r["rating"] != nil {
				t.Fatalf("an unrated review got rating %v", r["rating"])
			}
			if r["content"] == "fast mint" && r["rating"] != 2.0 {
				t.Fatalf("rating tag: %v", r)
			}
		}
		// Saved reviews refresh the mint's summary in the background (the
		// last one saved brings the rated count to 2).
		testkit.WaitFor(t, 15*time.Second, "the trust breakdown to count the reviews", func() bool {
			tr := api.Do("GET", "/mints/"+id+"/trust", nil).Map(t)
			return tr["breakdown"].(map[string]any)["reviews"].(map[string]any)["rated_count"] == 2.0
		})
		e.getAll(t, id, mint.URL) // by id, by URL and /v1 agree on reviews too
		page := api.Do("GET", "/mints/"+id+"/reviews?limit=1", nil).Map(t)
		if len(page["reviews"].([]any)) != 1 || page["summary"].(map[string]any)["count"] != 3.0 {
			t.Fatalf("page = %v", page)
		}

		// A viewer whose contact list follows alice sees her review marked.
		dave := nostr.GeneratePrivateKey()
		davePub, _ := nostr.GetPublicKey(dave)
		if err := relaytest.Publish(t, e.nostr, relaytest.Sign(t, dave, 3, "", nostr.Tag{"p", alicePub})); err != nil {
			t.Fatal(err)
		}
		seen := api.Do("GET", "/mints/"+id+"/reviews?viewer="+pubkey.NPub(davePub), nil).Map(t)
		if seen["followed_by_viewer"] != 1.0 {
			t.Fatalf("followed_by_viewer = %v", seen["followed_by_viewer"])
		}
		for _, r := range seen["reviews"].([]any) {
			r := r.(map[string]any)
			if want := r["pubkey"] == pubkey.NPub(alicePub); r["followed_by_viewer"] != want || r["weight"] != 1.0 {
				t.Fatalf("review %v: followed_by_viewer want %v, weight 1", r, want)
			}
		}
		wantStatus(t, api.Do("GET", "/mints/"+id+"/reviews?viewer=nobody", nil), 400, "invalid_viewer")
	})

	t.Run("views", func(t *testing.T) {
		before := api.Do("GET", "/mints/"+id+"/views", nil).Map(t)["views_24h"].(float64)
		for range 3 {
			api.Do("GET", "/mints/"+id, nil)
		}
		api.Do("GET", "/mints/by-url?url="+url.QueryEscape(mint.URL), nil)
		v := api.Do("GET", "/mints/"+id+"/views", nil).Map(t)
		if v["views_24h"].(float64) != before+4 || v["unique_sessions_30d"] != 1.0 || v["view_velocity"].(float64) <= 0 {
			t.Fatalf("views = %v (before %v)", v, before)
		}
	})

	t.Run("list, stats, health", func(t *testing.T) {
		for _, p := range []string{"/mints", "/v1/mints", "/mints?status=online&sort=name&limit=1&offset=0", "/mints?sort=uptime"} {
			r := api.Do("GET", p, nil)
			wantStatus(t, r, 200, "")
			if l := r.Map(t); l["total"] != 1.0 || len(l["mints"].([]any)) != 1 {
				t.Fatalf("%s = %s", p, r.Body)
			}
		}
		if l := api.Do("GET", "/mints?status=offline", nil).Map(t); l["total"] != 0.0 {
			t.Fatalf("offline list = %v", l)
		}
		for _, p := range []string{"/stats", "/v1/stats"} {
			s := api.Do("GET", p, nil).Map(t)
			if s["mints_total"] != 1.0 || s["by_status"].(map[string]any)["online"] != 1.0 || s["reviews_total"] != 4.0 ||
				s["checks_total"].(float64) < 5 || len(s["nut_adoption"].([]any)) == 0 {
				t.Fatalf("%s = %v", p, s)
			}
		}
		for _, p := range []string{"/health", "/v1/health"} {
			h := api.Do("GET", p, nil).Map(t)
			if c, _ := h["checks"].(map[string]any); h["status"] != "ok" || c["mints_total"] != 1.0 || c["last_probe_cycle_at"] == nil {
				t.Fatalf("%s = %v", p, h)
			}
		}
		resp, err := http.Get(e.srv.URL + "/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("root health: %v %v", resp, err)
		}
		resp.Body.Close()
		wantStatus(t, api.Do("GET", "/openapi.json", nil), 200, "")
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tt := range []struct{ path, code string }{
			{"/mints/00000000-0000-4000-8000-000000000000", "mint_not_found"},
			{"/mints/not-an-id/status", "mint_not_found"},
			{"/v1/mints/00000000-0000-4000-8000-000000000000/trust", "mint_not_found"},
			{"/mints/by-url?url=https://unknown.example", "mint_not_found"},
			{"/mints/by-url/metadata?url=nonsense", "mint_not_found"},
		} {
			wantStatus(t, api.Do("GET", tt.path, nil), 404, tt.code)
		}
		for _, tt := range []struct{ path, code string }{
			{"/mints/by-url", "missing_url"},
			{"/v1/mints/by-url/uptime?url=", "missing_url"},
			{"/mints/" + id + "/uptime?window=1y", "invalid_window"},
			{"/mints/" + id + "/uptime/timeseries?bucket=1m", "invalid_bucket"},
			{"/mints/" + id + "/uptime/timeseries?window=7d&bucket=2h", "invalid_bucket"},
			{"/mints/" + id + "/incidents?limit=0", "invalid_limit"},
			{"/mints/" + id + "/reviews?limit=501", "invalid_limit"},
			{"/mints/" + id + "/metadata/history?before=yesterday", "invalid_before"},
			{"/mints?status=sleepy", "invalid_status"},
			{"/mints?sort=random", "invalid_sort"},
			{"/mints?offset=-1", "invalid_offset"},
		} {
			wantStatus(t, api.Do("GET", tt.path, nil), 400, tt.code)
		}
		wantStatus(t, api.Do("DELETE", "/mints/"+id, nil), 405, "method_not_allowed")
		wantStatus(t, api.Do("GET", "/nope", nil), 404, "not_found")
		// Every window and bucket answers.
		for _, q := range []string{"window=7d", "window=30d", "window=24h&bucket=15m", "window=30d&bucket=5m&limit=10", "window=7d&before=2099-01-01T00:00:00Z"} {
			wantStatus(t, api.Do("GET", "/mints/"+id+"/uptime/timeseries?"+q, nil), 200, "")
		}
	})
	// The audit wallet's admin routes take the ban list's admin keys; this
	// server has none (TestAudits has).
	for _, p := range []string{"", "/v1"} {
		wantStatus(t, api.Do("GET", p+"/admin/audit", nil), 401, "unauthorized")
		wantStatus(t, api.Do("POST", p+"/admin/audit/deposit", map[string]any{"amount": 1}), 401, "unauthorized")
	}

	api.AssertAllReached()
}

func TestSubmitGuards(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, 4) // refused submissions count too
	mint := startMint(t, filepath.Join(t.TempDir(), "m"), "")
	for _, u := range []string{mint.URL, strings.Replace(mint.URL, "127.0.0.1", "localhost", 1), "http://10.0.0.1:3338", "http://[::1]:3338"} {
		r := e.api.Do("POST", "/mints/submit", map[string]string{"mint_url": u})
		wantStatus(t, r, 400, "invalid_mint_url")
	}
	r := e.api.Do("POST", "/mints/submit", map[string]string{"mint_url": mint.URL})
	wantStatus(t, r, 429, "rate_limit_exceeded")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if l := e.api.Do("GET", "/mints", nil).Map(t); l["total"] != 0.0 {
		t.Fatalf("mints = %v", l)
	}
}

func TestAMisbehavingMintShowsItsErrorKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Cashu mint under maintenance</body></html>")
	}))
	defer srv.Close()
	id := e.api.Do("POST", "/mints/submit", map[string]string{"mint_url": srv.URL}).Map(t)["mint_id"].(string)
	testkit.WaitFor(t, 15*time.Second, "the first check", func() bool {
		return e.api.Do("GET", "/mints/"+id+"/status", nil).Map(t)["last_error"] == "html"
	})
	all := e.getAll(t, id, srv.URL)
	if all[""]["status"] != "unknown" || all["/metadata"]["name"] != nil || all["/features"]["supports_bolt11"] != nil ||
		all["/uptime"]["uptime_pct"] != 0.0 || all["/trust"]["score_level"] != "unknown" {
		t.Fatalf("a mint never seen up: %v", all)
	}
	if up := all["/trust"]["breakdown"].(map[string]any)["uptime"].(map[string]any); up["max"] != 40.0 || up["uptime_30d"] != 0.0 {
		t.Fatalf("trust breakdown of a mint never seen up: %v", all["/trust"])
	}
}

// A submitted URL is either refused with invalid_mint_url or stored in its
// one spelling: an IPv6 zone (which once panicked), port 0 and ports above
// 65535 are refused; a port with leading zeros and dot segments are
// normalised, so the same mint is found again. Announcements of such URLs
// are refused by the relay.
func TestSubmitURLForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, 0)
	r := e.api.Do("POST", "/mints/submit", map[string]string{"mint_url": "http://127.0.0.1:1/cashu"})
	wantStatus(t, r, 202, "")
	id := r.Map(t)["mint_id"]
	for _, tt := range []struct {
		url    string
		status int
		code   string
	}{
		{"http://[fe80::1%25eth0]/", 400, "invalid_mint_url"},
		{"http://[::1%25lo]:9", 400, "invalid_mint_url"},
		{"http://127.0.0.1:0/cashu", 400, "invalid_mint_url"},
		{"http://127.0.0.1:99999/cashu", 400, "invalid_mint_url"},
		{"http://127.0.0.1:65536", 400, "invalid_mint_url"},
		{"http://127.0.0.1:0001/cashu", 200, ""},
		{"http://127.0.0.1:1/cashu/./", 200, ""},
		{"http://127.0.0.1:1/x/../cashu", 200, ""},
		{"http://127.0.0.1:1/cashu/v1/..", 200, ""},
		{"http://127.0.0.1:1/./../cashu/%2e", 200, ""},
	} {
		t.Run(tt.url, func(t *testing.T) {
			r := e.api.Do("POST", "/mints/submit", map[string]string{"mint_url": tt.url})
			wantStatus(t, r, tt.status, tt.code)
			if tt.status == 200 && r.Map(t)["mint_id"] != id {
				t.Fatalf("%s is another mint: %s", tt.url, r.Body)
			}
		})
	}
	if l := e.api.Do("GET", "/mints", nil).Map(t); l["total"] != 1.0 {
		t.Fatalf("mints = %v, want the one", l)
	}
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	for _, u := range []string{"http://[fe80::1%25eth0]/", "http://127.0.0.1:0", "http://127.0.0.1:99999"} {
		err := relaytest.Publish(t, e.nostr, relaytest.Sign(t, sk, mintdir.KindCashuAnnouncement, "", nostr.Tag{"d", pk}, nostr.Tag{"u", u}))
		if err == nil || !strings.Contains(err.Error(), "invalid:") {
			t.Errorf("announcing %s: %v, want an invalid: refusal", u, err)
		}
	}
}
