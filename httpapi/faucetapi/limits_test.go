package faucetapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// claim quotes and confirms a cashu claim and fails the test unless it is paid.
func (e *env) claim(u *user) map[string]any {
	e.t.Helper()
	r := e.signed(u, "POST", "/claim/quote", map[string]any{"method": "cashu"})
	want(e.t, r, 200, "")
	r = e.signed(u, "POST", "/claim/confirm", map[string]any{"quote_id": r.Map(e.t)["quote_id"]})
	want(e.t, r, 200, "")
	return r.Map(e.t)
}

func wantLimited(t *testing.T, r interface{ ErrorCode() string }, status int, body []byte, header string, reason string) {
	t.Helper()
	if status != 429 || !strings.Contains(string(body), `"reason":"`+reason+`"`) || header == "" {
		t.Fatalf("got %d %s (Retry-After %q), want 429 %s", status, body, header, reason)
	}
}

// TestLimits drives the cooldown, the per-IP and the site-wide limits with
// the injected clock.
func TestLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5000, func(c *faucet.Config) {
		c.FixedSats, c.IPLimit, c.SitewideLimit, c.SitewideWindow = 20, 2, 3, time.Hour
	})
	a, b, c, d := e.newUser("a", theMint, nil), e.newUser("b", theMint, nil), e.newUser("c", theMint, nil), e.newUser("d", theMint, nil)
	a.ip, b.ip, c.ip = "192.0.2.7", "192.0.2.7", "192.0.2.7"
	e.claim(a)
	e.claim(b)
	r := e.signed(c, "POST", "/claim/quote", map[string]any{"method": "cashu"})
	wantLimited(t, r, r.Status, r.Body, r.Header.Get("Retry-After"), "ip_limit")
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 86000 || ra > 86400 {
		t.Fatalf("ip_limit Retry-After %d, want about a day", ra)
	}
	c.ip = "198.51.100.1"
	e.claim(c)
	r = e.signed(d, "POST", "/claim/quote", map[string]any{"method": "cashu"})
	wantLimited(t, r, r.Status, r.Body, r.Header.Get("Retry-After"), "sitewide_limit")
	el := e.signed(d, "GET", "/auth/me", nil).Map(t)["eligibility"].(map[string]any)
	if el["eligible"] != false || strs(el["reasons"])[0] != "sitewide_limit" {
		t.Fatalf("eligibility %v", el)
	}

	e.clock.Add(61 * time.Minute)
	e.claim(d)
	r = e.signed(a, "POST", "/claim/quote", map[string]any{"method": "cashu"})
	wantLimited(t, r, r.Status, r.Body, r.Header.Get("Retry-After"), "cooldown")
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 22*3600 || ra > 23*3600 {
		t.Fatalf("cooldown Retry-After %d, want about 23 hours", ra)
	}

	e.clock.Add(23 * time.Hour)
	e.claim(a) // a's cooldown and the address's two claims are a day old
	if st := e.stats(); num(st["total_claims"]) != 5 || num(st["claims_24h"]) != 2 {
		t.Fatalf("stats %v", st)
	}
}

func TestBudgetAndBalance(t *testing.T) {
	t.Parallel()
	t.Run("daily budget", func(t *testing.T) {
		e := newEnv(t, 5000, func(c *faucet.Config) { c.FixedSats, c.DailyBudgetSats, c.MaxFeeSats = 50, 130, 10 })
		e.claim(e.newUser("a", theMint, nil))
		e.claim(e.newUser("b", theMint, nil))
		if st := e.stats(); num(st["daily_spent_sats"]) != 100 || num(st["daily_budget_sats"]) != 130 {
			t.Fatalf("stats %v", st)
		}
		c := e.newUser("c", theMint, nil)
		r := e.signed(c, "POST", "/claim/quote", map[string]any{"method": "cashu"})
		want(t, r, 503, "budget_exhausted")
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After until the next day")
		}
		y, m, d := e.clock.Now().UTC().Date()
		e.clock.Add(time.Date(y, m, d+1, 0, 0, 1, 0, time.UTC).Sub(e.clock.Now()))
		e.claim(c)
	})
	t.Run("minimum balance", func(t *testing.T) {
		e := newEnv(t, 200, func(c *faucet.Config) { c.FixedSats, c.MinBalanceSats, c.MaxFeeSats = 50, 100, 10 })
		e.claim(e.newUser("a", theMint, nil)) // 200 - 50 - 10 ≥ 100
		u := e.newUser("b", theMint, nil)
		want(t, e.signed(u, "POST", "/claim/quote", map[string]any{"method": "cashu"}), 503, "insufficient_funds")
		el := e.signed(u, "GET", "/auth/me", nil).Map(t)["eligibility"].(map[string]any)
		if strs(el["reasons"])[0] != "insufficient_funds" {
			t.Fatalf("eligibility %v", el)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		e := newEnv(t, 0, func(c *faucet.Config) { c.Enabled = false })
		u := e.newUser("a", theMint, nil)
		e.login(u)
		want(t, e.as(u, "POST", "/claim/quote", map[string]any{"method": "cashu"}), 503, "faucet_disabled")
		want(t, e.as(u, "POST", "/claim/confirm", map[string]any{"quote_id": "q_whatever"}), 503, "faucet_disabled")
		if c := e.api.Do("GET", "/config", nil).Map(t); c["enabled"] != false {
			t.Fatalf("config %v", c)
		}
	})
}

// startRelay serves another relay on its own store, as a profile relay.
func startRelay(t *testing.T) (url string, publish func(nostr.Event)) {
	t.Helper()
	srv, _ := relaytest.Start(t)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), func(ev nostr.Event) {
		t.Helper()
		if err := publishTo(srv.URL, ev); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAccountAge: an account's age counts from when outpost first received
// an event of it, here or from a profile relay, never from the date the
// event carries: a note dated 400 days back makes no account old.
func TestAccountAge(t *testing.T) {
	t.Parallel()
	remote, publishRemote := startRelay(t)
	e := newEnv(t, 1000, func(c *faucet.Config) {
		c.MinAccountAge = 14 * 24 * time.Hour
		c.Profiles = &profiles.Fetcher{Relays: []string{remote}}
	})
	sign := func(u *user, kind int, at time.Time) nostr.Event {
		ev := nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()), Content: "hi", Tags: nostr.Tags{}}
		ev.Sign(u.sk)
		return ev
	}
	local := e.newUser("local", theMint, map[string]any{"name": "local"})
	e.publish(sign(local, 1, time.Now().Add(-400*24*time.Hour)))
	far := e.newUser("far", theMint, map[string]any{"name": "far"})
	publishRemote(sign(far, 1, time.Now().Add(-400*24*time.Hour)))
	nobody := e.newUser("nobody", theMint, nil)

	firstSeen := e.clock.Now().Unix()
	for _, u := range []*user{local, far} {
		m := e.login(u)
		if fs := num(m["user"].(map[string]any)["first_seen_at"]); fs < firstSeen {
			t.Fatalf("%s first seen at %d, before outpost received anything of it (%d)", u.name, fs, firstSeen)
		}
		r := e.as(u, "POST", "/claim/quote", map[string]any{"method": "cashu"})
		want(t, r, 403, "account_too_new")
		if !strings.Contains(string(r.Body), `"eligible_at"`) {
			t.Fatalf("no eligible_at: %s", r.Body)
		}
		el := e.as(u, "GET", "/auth/me", nil).Map(t)["eligibility"].(map[string]any)
		if strs(el["reasons"])[0] != "account_too_new" || num(el["next_claim_at"]) < firstSeen+14*24*3600 {
			t.Fatalf("eligibility %v", el)
		}
	}
	e.loginNPub(nobody)
	want(t, e.as(nobody, "POST", "/claim/quote", map[string]any{"method": "lightning_address", "lightning_address": nobody.address}), 422, "no_lightning_address")
	e.login(nobody)
	want(t, e.as(nobody, "POST", "/claim/quote", map[string]any{"method": "cashu"}), 403, "account_too_new")

	// Fourteen days after outpost first received their notes, both are old enough.
	e.clock.Add(14*24*time.Hour + time.Second)
	for _, u := range []*user{local, far} {
		e.login(u)
		e.quote(u, map[string]any{"method": "cashu"})
	}
}
