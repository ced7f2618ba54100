package banlistapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/internal/wot"
	"github.com/outpost-relay/outpost/policies"
)

const adminKey = "bootstrap-admin-key-for-tests-0123456789"

type env struct {
	srv   *httptest.Server
	api   *apitest.Client
	svc   *banlist.Service
	st    *store.Store
	clock *testkit.Clock
}

type options struct {
	reportsPublic bool
	ratePerMin    int
	reportsPerMin int
	follow        string // OUTPOST_BANLIST_FOLLOW
	trust         *wot.WoT
}

func newEnv(t *testing.T, o options) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(t, storetest.Options{Log: log})
	c := testkit.NewClock(time.Now().Truncate(time.Second))
	svc, err := banlist.New(banlist.Config{
		DB: st.DB, Events: st.Events, List: policies.NewBanList(), SecretKey: nostr.GeneratePrivateKey(),
		Log: log, Now: c.Now, Settings: banlist.Settings{AdminKey: adminKey, Follow: o.follow},
		// Health's thresholds are on the clock c; the polls, not waited out
		FollowInterval: 50 * time.Millisecond,
		Publish:        func(ctx context.Context, ev *nostr.Event) error { _, err := st.Events.Save(ctx, ev); return err },
	})
	if err != nil {
		t.Fatal(err)
	}
	routes := banlistapi.Routes(banlistapi.Config{Service: svc, Log: log, Now: c.Now,
		Settings: banlistapi.Settings{ReportsPublic: o.reportsPublic, ReportsPerMin: o.reportsPerMin}, Trust: o.trust})
	h := httpapi.New(httpapi.Config{
		Relay: http.NotFoundHandler(),
		Services: []httpapi.Service{{Name: "banlist", Mount: "/banlist", Routes: routes, PassBlocked: banlistapi.PassBlocked(svc, "/banlist"),
			Health: httpapi.ReportHealth(svc.Health)}},
		RateLimit: ratelimit.New(o.ratePerMin, time.Minute, c.Now),
		BlockedIP: func(ip string) bool { _, ok := svc.List().IPBlocked(ip); return ok },
		Log:       log,
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{srv: srv, api: apitest.New(t, srv.URL+"/banlist", banlistapi.OpenAPI()), svc: svc, st: st, clock: c}
}

func bearer(k string) []string { return []string{"Authorization", "Bearer " + k} }

func newKey() (sk, hex, npub string) {
	sk = nostr.GeneratePrivateKey()
	hex, _ = nostr.GetPublicKey(sk)
	return sk, hex, pubkey.NPub(hex)
}

func wantStatus(t *testing.T, r *apitest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || (code != "" && r.ErrorCode() != code) {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

// TestAPI walks every endpoint; every response is checked against openapi.json.
func TestAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{reportsPerMin: 100})
	api := e.api
	_, pkHex, pkNpub := newKey()
	_, otherHex, _ := newKey()
	var modKey, viewerKey string

	t.Run("keys", func(t *testing.T) {
		r := api.Do("POST", "/admin/keys", map[string]any{"name": "mod", "role": "moderator"}, bearer(adminKey)...)
		wantStatus(t, r, 201, "")
		var created struct {
			APIKey string `json:"api_key"`
		}
		r.JSON(t, &created)
		modKey = created.APIKey
		r = api.Do("POST", "/admin/keys", map[string]any{"name": "viewer", "role": "viewer"}, bearer(adminKey)...)
		r.JSON(t, &created)
		viewerKey = created.APIKey
		wantStatus(t, api.Do("POST", "/admin/keys", map[string]any{"name": "mod", "role": "viewer"}, bearer(adminKey)...), 409, "key_name_taken")
		wantStatus(t, api.Do("POST", "/admin/keys", map[string]any{"name": "x", "role": "root"}, bearer(adminKey)...), 400, "invalid_role")
		wantStatus(t, api.Do("POST", "/admin/keys", map[string]any{"name": "x", "role": "viewer"}, bearer(modKey)...), 403, "forbidden")
		r = api.Do("GET", "/admin/keys", nil, bearer(adminKey)...)
		wantStatus(t, r, 200, "")
		if n := len(r.Map(t)["keys"].([]any)); n != 2 {
			t.Fatalf("%d keys listed, want 2", n)
		}
		// A key that is created and revoked stops working at once.
		r = api.Do("POST", "/admin/keys", map[string]any{"name": "temp", "role": "admin"}, bearer(adminKey)...)
		r.JSON(t, &created)
		wantStatus(t, api.Do("DELETE", "/admin/keys/temp", nil, bearer(adminKey)...), 200, "")
		wantStatus(t, api.Do("GET", "/admin/keys", nil, bearer(created.APIKey)...), 401, "unauthorized")
		wantStatus(t, api.Do("DELETE", "/admin/keys/temp", nil, bearer(adminKey)...), 404, "key_not_found")
	})

	t.Run("auth", func(t *testing.T) {
		body := map[string]any{"pubkey": pkNpub, "reason": "spam"}
		wantStatus(t, api.Do("POST", "/admin/ban", body), 401, "unauthorized")
		wantStatus(t, api.Do("POST", "/admin/ban", body, "Authorization", "Basic abc"), 401, "unauthorized")
		wantStatus(t, api.Do("POST", "/admin/ban", body, bearer("opk_not-a-real-key")...), 401, "unauthorized")
		wantStatus(t, api.Do("POST", "/admin/ban", body, bearer(viewerKey)...), 403, "forbidden")
		wantStatus(t, api.Do("GET", "/admin/bans", nil, bearer(viewerKey)...), 200, "")
		wantStatus(t, api.Do("GET", "/admin/audit", nil, bearer(modKey)...), 403, "forbidden")
	})

	var etag string
	t.Run("ban, status, list", func(t *testing.T) {
		r := api.Do("GET", "/blocked/pubkeys", nil)
		wantStatus(t, r, 200, "")
		etag = r.Header.Get("ETag")
		if etag == "" || len(r.Map(t)["pubkeys"].([]any)) != 0 {
			t.Fatalf("empty list: etag %q body %s", etag, r.Body)
		}
		wantStatus(t, api.Do("GET", "/blocked/pubkeys", nil, "If-None-Match", etag), 304, "")

		r = api.Do("POST", "/admin/ban", map[string]any{"pubkey": pkNpub, "reason": "spam"}, bearer(modKey)...)
		wantStatus(t, r, 200, "")
		ban := r.Map(t)["ban"].(map[string]any)
		if ban["pubkey"] != pkNpub || ban["pubkey_hex"] != pkHex || ban["state"] != "active" || ban["expires_at"] != nil || ban["banned_by"] != "key:mod" {
			t.Fatalf("ban record = %v", ban)
		}

		r = api.Do("GET", "/blocked/pubkeys/"+pkHex, nil)
		if m := r.Map(t); m["blocked"] != true || m["reason"] != "spam" || m["expires_at"] != nil {
			t.Fatalf("status = %s", r.Body)
		}
		r = api.Do("GET", "/blocked/pubkeys/"+otherHex, nil)
		if m := r.Map(t); m["blocked"] != false || m["reason"] != "" {
			t.Fatalf("status of an unbanned key = %s", r.Body)
		}
		r = api.Do("GET", "/blocked/pubkeys", nil, "If-None-Match", etag)
		wantStatus(t, r, 200, "")
		if r.Header.Get("ETag") == etag {
			t.Fatal("ETag did not change with the list")
		}
		list := r.Map(t)["pubkeys"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["pubkey"] != pkNpub {
			t.Fatalf("list = %s", r.Body)
		}
		etag = r.Header.Get("ETag")
	})

	t.Run("duration and temp-ban lapse on their own", func(t *testing.T) {
		r := api.Do("POST", "/admin/ban", map[string]any{"pubkey": otherHex, "reason": "cool off", "duration": 60}, bearer(modKey)...)
		wantStatus(t, r, 200, "")
		want := float64(e.clock.Now().Unix() + 60)
		if got := r.Map(t)["ban"].(map[string]any)["expires_at"]; got != want {
			t.Fatalf("expires_at = %v, want %v", got, want)
		}
		_, tmpHex, _ := newKey()
		exp := e.clock.Now().Unix() + 30
		r = api.Do("POST", "/admin/temp-ban", map[string]any{"pubkey": tmpHex, "reason": "flood", "expires_at": exp}, bearer(modKey)...)
		wantStatus(t, r, 200, "")
		r = api.Do("GET", "/blocked/pubkeys", nil)
		if n := len(r.Map(t)["pubkeys"].([]any)); n != 3 {
			t.Fatalf("%d listed, want 3", n)
		}
		e.clock.Add(30 * time.Second)
		r = api.Do("GET", "/blocked/pubkeys/"+tmpHex, nil)
		if r.Map(t)["blocked"] != false {
			t.Fatal("temp ban did not lapse at expires_at")
		}
		r = api.Do("GET", "/blocked/pubkeys", nil)
		if n := len(r.Map(t)["pubkeys"].([]any)); n != 2 {
			t.Fatalf("after the temp ban lapsed %d listed, want 2 (the cached list must expire too)", n)
		}
		r = api.Do("GET", "/admin/bans?state=expired", nil, bearer(viewerKey)...)
		bans := r.Map(t)["bans"].([]any)
		if len(bans) != 1 || bans[0].(map[string]any)["pubkey_hex"] != tmpHex {
			t.Fatalf("expired bans = %s", r.Body)
		}
		e.clock.Add(30 * time.Second)
	})

	t.Run("unban with hex of an npub ban", func(t *testing.T) {
		r := api.Do("POST", "/admin/unban", map[string]any{"pubkey": pkHex}, bearer(modKey)...)
		wantStatus(t, r, 200, "")
		if m := r.Map(t); m["status"] != "unbanned" || m["ban"].(map[string]any)["state"] != "lifted" || m["ban"].(map[string]any)["lifted_by"] != "key:mod" {
			t.Fatalf("unban = %s", r.Body)
		}
		if api.Do("GET", "/blocked/pubkeys/"+pkNpub, nil).Map(t)["blocked"] != false {
			t.Fatal("still blocked after unban")
		}
		wantStatus(t, api.Do("POST", "/admin/unban", map[string]any{"pubkey": pkNpub}, bearer(modKey)...), 404, "ban_not_found")
		r = api.Do("GET", "/admin/bans?state=lifted&limit=10", nil, bearer(viewerKey)...)
		if n := len(r.Map(t)["bans"].([]any)); n != 1 {
			t.Fatalf("%d lifted bans, want 1", n)
		}
	})

	t.Run("bad input writes nothing", func(t *testing.T) {
		before := len(api.Do("GET", "/admin/audit?limit=1000", nil, bearer(adminKey)...).Map(t)["audit"].([]any))
		future := e.clock.Now().Unix() + 100
		cases := []badRequest{
			{"malformed json", "/admin/ban", `{"pubkey":`, 400, "invalid_json"},
			{"not an object", "/admin/ban", `[1,2]`, 400, "invalid_json"},
			{"empty body", "/admin/ban", ``, 400, "invalid_json"},
			{"two objects", "/admin/ban", `{"pubkey":"x"} {}`, 400, "invalid_json"},
			{"wrong type", "/admin/ban", `{"pubkey": 12, "reason": "x"}`, 400, "invalid_field"},
			{"duration as string", "/admin/ban", map[string]any{"pubkey": pkHex, "reason": "x", "duration": "60"}, 400, "invalid_field"},
			{"fractional duration", "/admin/ban", `{"pubkey": "` + pkHex + `", "reason": "x", "duration": 1.5}`, 400, "invalid_field"},
			{"missing pubkey", "/admin/ban", map[string]any{"reason": "x"}, 400, "invalid_request"},
			{"missing reason", "/admin/ban", map[string]any{"pubkey": pkHex}, 400, "invalid_request"},
			{"reason too long", "/admin/ban", map[string]any{"pubkey": pkHex, "reason": strings.Repeat("x", 201)}, 400, "invalid_request"},
			{"invalid npub", "/admin/ban", map[string]any{"pubkey": badChecksum(pkNpub), "reason": "x"}, 400, "invalid_pubkey"},
			{"short hex", "/admin/ban", map[string]any{"pubkey": pkHex[:60], "reason": "x"}, 400, "invalid_pubkey"},
			{"zero duration", "/admin/ban", map[string]any{"pubkey": pkHex, "reason": "x", "duration": 0}, 400, "invalid_duration"},
			{"negative duration", "/admin/ban", map[string]any{"pubkey": pkHex, "reason": "x", "duration": -5}, 400, "invalid_duration"},
			{"temp-ban in the past", "/admin/temp-ban", map[string]any{"pubkey": pkHex, "reason": "x", "expires_at": e.clock.Now().Unix() - 1}, 400, "invalid_expires_at"},
			{"temp-ban now", "/admin/temp-ban", map[string]any{"pubkey": pkHex, "reason": "x", "expires_at": e.clock.Now().Unix()}, 400, "invalid_expires_at"},
			{"temp-ban without expiry", "/admin/temp-ban", map[string]any{"pubkey": pkHex, "reason": "x"}, 400, "invalid_request"},
			{"temp-ban without reason", "/admin/temp-ban", map[string]any{"pubkey": pkHex, "expires_at": future}, 400, "invalid_request"},
			{"unban bad key", "/admin/unban", map[string]any{"pubkey": "nope"}, 400, "invalid_pubkey"},
			{"unban not banned", "/admin/unban", map[string]any{"pubkey": pkHex}, 404, "ban_not_found"},
			{"oversize body", "/admin/ban", `{"pubkey":"` + pkHex + `","reason":"` + strings.Repeat("x", 70_000) + `"}`, 413, "request_too_large"},
			{"empty word", "/admin/words", map[string]any{"word": "  "}, 400, "invalid_request"},
			{"punctuation word", "/admin/words", map[string]any{"word": "!!!"}, 400, "invalid_word"},
			{"word as number", "/admin/words", `{"word": 5}`, 400, "invalid_field"},
			{"bulk: empty", "/admin/bans", `[]`, 400, "invalid_batch"},
			{"bulk: not an array", "/admin/bans", map[string]any{"pubkey": pkHex, "reason": "x"}, 400, "invalid_json"},
			{"bulk: one bad key", "/admin/bans", []any{map[string]any{"pubkey": otherHex, "reason": "x"}, map[string]any{"pubkey": "nope", "reason": "x"}}, 400, "invalid_pubkey"},
			{"bulk: one without reason", "/admin/bans", []any{map[string]any{"pubkey": otherHex, "reason": "x"}, map[string]any{"pubkey": pkHex}}, 400, "invalid_request"},
			{"bulk: duration and expires_at", "/admin/bans", []any{map[string]any{"pubkey": pkHex, "reason": "x", "duration": 5, "expires_at": future}}, 400, "invalid_request"},
			{"bulk: expiry in the past", "/admin/bans", []any{map[string]any{"pubkey": pkHex, "reason": "x", "expires_at": e.clock.Now().Unix() - 1}}, 400, "invalid_expires_at"},
			{"bulk: wrong type", "/admin/bans", `[{"pubkey": 5, "reason": "x"}]`, 400, "invalid_field"},
			{"bulk: truncated", "/admin/bans", `[{"pubkey": "` + pkHex + `", "reason": "x"}`, 400, "invalid_json"},
			{"bulk: trailing data", "/admin/bans", `[{"pubkey": "` + pkHex + `", "reason": "x"}] {}`, 400, "invalid_json"},
		}
		cases = append(cases, accessBadInput(pkHex)...)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				wantStatus(t, api.Do("POST", c.path, c.body, bearer(modKey)...), c.status, c.code)
			})
		}
		if api.Do("GET", "/blocked/pubkeys/"+pkHex, nil).Map(t)["blocked"] != false {
			t.Fatal("a rejected request banned the key")
		}
		after := len(api.Do("GET", "/admin/audit?limit=1000", nil, bearer(adminKey)...).Map(t)["audit"].([]any))
		if after != before {
			t.Fatalf("rejected requests were audited: %d → %d entries", before, after)
		}
		wantStatus(t, api.Do("GET", "/blocked/pubkeys/not-a-key", nil), 400, "invalid_pubkey")
		wantStatus(t, api.Do("GET", "/admin/bans?state=gone", nil, bearer(viewerKey)...), 400, "invalid_state")
		wantStatus(t, api.Do("GET", "/admin/bans?limit=0", nil, bearer(viewerKey)...), 400, "invalid_limit")
		wantStatus(t, api.Do("GET", "/admin/bans?until=yesterday", nil, bearer(viewerKey)...), 400, "invalid_until")
		wantStatus(t, api.Do("GET", "/no/such/route", nil), 404, "not_found")
		wantStatus(t, api.Do("PUT", "/admin/ban", nil, bearer(modKey)...), 405, "method_not_allowed")
	})

	t.Run("words", func(t *testing.T) {
		r := api.Do("POST", "/admin/words", map[string]any{"word": "Casino"}, bearer(modKey)...)
		wantStatus(t, r, 201, "")
		wantStatus(t, api.Do("POST", "/admin/words", map[string]any{"word": "CASINO"}, bearer(modKey)...), 409, "word_exists")
		wantStatus(t, api.Do("POST", "/admin/words", map[string]any{"word": "buy now"}, bearer(modKey)...), 201, "")
		r = api.Do("GET", "/blocked/words", nil)
		if got := fmt.Sprint(r.Map(t)["words"]); got != "[buy now Casino]" {
			t.Fatalf("words = %s", got)
		}
		if w, ok := e.svc.List().BlockedWord("best casino!"); !ok || w != "Casino" {
			t.Fatal("the relay snapshot did not get the word")
		}
		wantStatus(t, api.Do("GET", "/blocked/words", nil, "If-None-Match", r.Header.Get("ETag")), 304, "")
		r = api.Do("GET", "/admin/words", nil, bearer(viewerKey)...)
		if w := r.Map(t)["words"].([]any); len(w) != 2 || w[1].(map[string]any)["added_by"] != "key:mod" {
			t.Fatalf("admin words = %s", r.Body)
		}
		wantStatus(t, api.Do("DELETE", "/admin/words/casino", nil, bearer(modKey)...), 200, "")
		wantStatus(t, api.Do("DELETE", "/admin/words/casino", nil, bearer(modKey)...), 404, "word_not_found")
		if _, ok := e.svc.List().BlockedWord("best casino!"); ok {
			t.Fatal("the relay snapshot kept a removed word")
		}
	})

	t.Run("reports", func(t *testing.T) {
		r := api.Do("POST", "/reports", map[string]any{"reported_pubkey": pkNpub, "reason": "spam", "event_ids": []string{strings.Repeat("ab", 32)}, "comment": "floods #bitcoin"})
		wantStatus(t, r, 201, "")
		id := r.Map(t)["report_id"].(string)
		wantStatus(t, api.Do("POST", "/reports", map[string]any{"reported_pubkey": pkNpub, "reason": "spam"}), 201, "") // duplicates are kept
		wantStatus(t, api.Do("POST", "/reports", map[string]any{"reported_pubkey": "bad", "reason": "spam"}), 400, "invalid_pubkey")
		wantStatus(t, api.Do("POST", "/reports", map[string]any{"reported_pubkey": pkNpub, "reason": ""}), 400, "invalid_request")
		wantStatus(t, api.Do("POST", "/reports", map[string]any{"reported_pubkey": pkNpub, "reason": "spam", "event_ids": []string{"xyz"}}), 400, "invalid_event_id")
		wantStatus(t, api.Do("POST", "/reports", map[string]any{"reported_pubkey": pkNpub, "reason": "spam", "comment": strings.Repeat("c", 2001)}), 400, "invalid_request")
		wantStatus(t, api.Do("GET", "/reports", nil), 401, "unauthorized")
		r = api.Do("GET", "/reports", nil, bearer(viewerKey)...)
		wantStatus(t, r, 200, "")
		reports := r.Map(t)["reports"].([]any)
		if len(reports) != 2 {
			t.Fatalf("%d reports, want 2", len(reports))
		}
		// Both reports may share a second; NIP-01 then orders by id.
		last := reports[1].(map[string]any)
		if reports[0].(map[string]any)["report_id"] == id {
			last = reports[0].(map[string]any)
		}
		if last["report_id"] != id || last["reported_pubkey"] != pkNpub || last["source"] != "api" || last["reporter"] != nil || last["comment"] != "floods #bitcoin" {
			t.Fatalf("report = %v", last)
		}
		// The report is a kind-1984 event signed by the service.
		var ev *nostr.Event
		for found, err := range e.st.Events.Find(context.Background(), nostr.Filter{IDs: []string{id}}) {
			if err != nil {
				t.Fatal(err)
			}
			ev = found
		}
		if ev == nil || ev.Kind != 1984 || ev.PubKey != e.svc.PubKey() || ev.Tags.FindWithValue("p", pkHex) == nil {
			t.Fatalf("report event = %v", ev)
		}
	})

	t.Run("audit", func(t *testing.T) {
		r := api.Do("GET", "/admin/audit?limit=5", nil, bearer(adminKey)...)
		wantStatus(t, r, 200, "")
		entries := r.Map(t)["audit"].([]any)
		if len(entries) != 5 || entries[0].(map[string]any)["action"] != "word.remove" {
			t.Fatalf("audit = %s", r.Body)
		}
	})

	t.Run("health and openapi", func(t *testing.T) {
		r := api.Do("GET", "/health", nil)
		wantStatus(t, r, 200, "")
		var h outpost.Health[banlist.HealthChecks]
		if r.JSON(t, &h); h.Status != "ok" || h.Checks.ActiveBans != 0 || h.Checks.BlockedWords != 1 || h.Checks.Following != nil || h.Checks.Publishing != nil {
			t.Fatalf("health = %s", r.Body)
		}
		wantStatus(t, api.Do("GET", "/openapi.json", nil), 200, "")
	})

	accessLists(t, e, modKey, viewerKey)
	api.AssertAllReached()
}

// badRequest is a request that must be refused with status and code.
type badRequest struct {
	name, path string
	body       any
	status     int
	code       string
}

func TestReportsPublicAndRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{reportsPublic: true, ratePerMin: 20, reportsPerMin: 2})
	_, _, npub := newKey()
	wantStatus(t, e.api.Do("GET", "/reports", nil), 200, "")
	wantStatus(t, e.api.Do("POST", "/reports", map[string]any{"reported_pubkey": npub, "reason": "spam"}), 201, "")
	wantStatus(t, e.api.Do("POST", "/reports", map[string]any{"reported_pubkey": npub, "reason": "spam"}), 201, "")
	r := e.api.Do("POST", "/reports", map[string]any{"reported_pubkey": npub, "reason": "spam"})
	wantStatus(t, r, 429, "rate_limit_exceeded")
	if r.Header.Get("Retry-After") != "30" {
		t.Fatalf("Retry-After = %q, want 30", r.Header.Get("Retry-After"))
	}
	for range 16 {
		wantStatus(t, e.api.Do("GET", "/blocked/words", nil), 200, "")
	}
	r = e.api.Do("GET", "/blocked/words", nil)
	wantStatus(t, r, 429, "rate_limit_exceeded")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	e.clock.Add(time.Minute)
	wantStatus(t, e.api.Do("GET", "/blocked/words", nil), 200, "")
}

// Another relay can follow this service's list with policies.SyncBanList.
func TestRemoteSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	remote, err := policies.SyncBanList(ctx, e.srv.URL+"/banlist", policies.SyncOptions{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, hex, npub := newKey()
	wantStatus(t, e.api.Do("POST", "/admin/ban", map[string]any{"pubkey": npub, "reason": "spam"}, bearer(adminKey)...), 200, "")
	wantStatus(t, e.api.Do("POST", "/admin/words", map[string]any{"word": "scam"}, bearer(adminKey)...), 201, "")
	reject := policies.RejectBannedAuthors(remote)
	for {
		r1, msg := reject(ctx, &nostr.Event{PubKey: hex})
		_, r2 := remote.BlockedWord("a scam")
		if r1 && r2 {
			if msg != "blocked: you are banned from this relay: spam" {
				t.Fatalf("msg = %q", msg)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the remote ban list never caught up")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := policies.SyncBanList(ctx, e.srv.URL+"/nothing-here", policies.SyncOptions{}); err == nil {
		t.Fatal("SyncBanList against a wrong URL should fail at once")
	}
}

// badChecksum changes the last character of an npub, which its bech32
// checksum then no longer matches.
func badChecksum(npub string) string {
	last := "q"
	if strings.HasSuffix(npub, last) {
		last = "p"
	}
	return npub[:len(npub)-1] + last
}
