package faucetapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

// TestWalkthrough claims with every payout method and every login, against
// a real gonuts mint, the relay serving the users' profiles and a Lightning
// address whose invoices are the user's own mint quotes; every response is
// checked against openapi.json, and every documented operation is called.
func TestWalkthrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5000, nil)
	api := e.api

	t.Run("public", func(t *testing.T) {
		r := api.Do("GET", "/health", nil)
		want(t, r, 200, "")
		if h := r.Map(t); h["version"] != "1.0.0" || h["checks"].(map[string]any)["store"] != "ok" {
			t.Fatalf("health %v", h)
		}
		want(t, api.Do("GET", "/openapi.json", nil), 200, "")
		r = api.Do("GET", "/config", nil)
		want(t, r, 200, "")
		if c := r.Map(t); c["test_mint"] != true || c["network"] != "signet" || c["invoice_prefix"] != "lntbs" || c["mint_url"] != theMint.URL {
			t.Fatalf("config %v", c)
		}
		st := e.stats()
		if num(st["balance_sats"]) != 5000 || num(st["total_deposited_sats"]) != 5000 || num(st["deposits_count"]) != 1 || num(st["total_claims"]) != 0 {
			t.Fatalf("stats after funding: %v", st)
		}
	})

	var balance int64 = 5000
	paid := func(t *testing.T, res map[string]any) int64 {
		t.Helper()
		amount, fee := num(res["amount_sats"]), num(res["fee_sats"])
		if res["status"] != "paid" || amount <= 0 || res["paid_at"] == nil || res["next_claim_at"] == nil {
			t.Fatalf("confirm %v", res)
		}
		balance -= amount + fee
		if b := num(e.stats()["balance_sats"]); b != balance {
			t.Fatalf("balance %d after paying %d+%d, want %d", b, amount, fee, balance)
		}
		return amount
	}

	t.Run("nip98 login, cashu token", func(t *testing.T) {
		alice := e.newUser("alice", theMint, map[string]any{"name": "alice", "display_name": "Alice", "nip05": "alice@example.com"})
		m := e.login(alice)
		user := m["user"].(map[string]any)
		if m["login_method"] != "nip98" || user["name"] != "alice" || user["pubkey"] != alice.pk || user["npub"] != alice.npub ||
			user["lud16"] != nil || user["first_seen_at"] == nil {
			t.Fatalf("login %v", m)
		}
		r := e.as(alice, "GET", "/auth/me", nil)
		want(t, r, 200, "")
		if el := r.Map(t)["eligibility"].(map[string]any); el["eligible"] != true || len(el["reasons"].([]any)) != 0 || el["next_claim_at"] != nil {
			t.Fatalf("me %s", r.Body)
		}
		q := e.quote(alice, map[string]any{"method": "cashu"})
		if again := e.quote(alice, map[string]any{"method": "cashu"}); again["quote_id"] != q["quote_id"] || again["amount_sats"] != q["amount_sats"] {
			t.Fatalf("asking again re-rolled: %v then %v", q, again)
		}
		if q["destination"] != nil || !oneOf(num(q["amount_sats"]), 10, 25, 50, 100) {
			t.Fatalf("quote %v", q)
		}
		r = e.as(alice, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"]})
		want(t, r, 200, "")
		res := r.Map(t)
		amount := paid(t, res)
		if amount != num(q["amount_sats"]) || res["payment_hash"] != nil || res["preimage"] != nil {
			t.Fatalf("confirm %v", res)
		}
		tok, err := cashu.DecodeToken(res["token"].(string))
		if err != nil {
			t.Fatal(err)
		}
		alice.mu.Lock()
		got, err := alice.w.Receive(tok, false)
		alice.mu.Unlock()
		if err != nil || int64(got) != amount {
			t.Fatalf("alice redeemed %d of %d: %v", got, amount, err)
		}
		// A lost answer: the confirm repeated, and the claim's status, give
		// the same token, and pay nothing more.
		r = e.as(alice, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"]})
		want(t, r, 200, "")
		if again := r.Map(t); again["claim_id"] != res["claim_id"] || again["token"] != res["token"] {
			t.Fatalf("the confirm repeated: %v, want %v", again, res)
		}
		r = e.as(alice, "GET", "/claims/"+q["quote_id"].(string), nil)
		want(t, r, 200, "")
		if st := r.Map(t); st["status"] != "paid" || st["claim"].(map[string]any)["token"] != res["token"] || st["reason"] != nil {
			t.Fatalf("the claim's status: %v", st)
		}
		if b := num(e.stats()["balance_sats"]); b != balance {
			t.Fatalf("balance %d after answering again, want %d", b, balance)
		}
		mallory := e.newUser("mallory", theMint, nil)
		e.login(mallory)
		want(t, e.as(mallory, "GET", "/claims/"+q["quote_id"].(string), nil), 404, "quote_not_found")
		want(t, e.as(alice, "GET", "/claims/"+strings.Repeat("q", 101), nil), 400, "invalid_request")
		r = e.as(alice, "POST", "/claim/quote", map[string]any{"method": "cashu"})
		want(t, r, 429, "rate_limit_exceeded")
		if r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), `"reason":"cooldown"`) {
			t.Fatalf("cooldown answer %v %s", r.Header, r.Body)
		}
		el := e.as(alice, "GET", "/auth/me", nil).Map(t)["eligibility"].(map[string]any)
		if el["eligible"] != false || el["reasons"].([]any)[0] != "cooldown" || num(el["next_claim_at"]) != num(res["next_claim_at"]) {
			t.Fatalf("eligibility in cooldown %v", el)
		}
	})

	t.Run("per-request nip98, bolt11", func(t *testing.T) {
		bob := e.newUser("bob", theMint, nil)
		r := e.signed(bob, "POST", "/claim/quote", map[string]any{"method": "bolt11"})
		want(t, r, 200, "")
		q := r.Map(t)
		invoice, mintQuote := bob.invoice(t, num(q["amount_sats"]))
		r = e.signed(bob, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": invoice})
		want(t, r, 200, "")
		res := r.Map(t)
		amount := paid(t, res)
		if res["token"] != nil || len(res["preimage"].(string)) != 64 || len(res["payment_hash"].(string)) != 64 {
			t.Fatalf("confirm %v", res)
		}
		if got := bob.mintQuote(t, mintQuote); int64(got) != amount {
			t.Fatalf("bob minted %d of %d", got, amount)
		}
		r = e.signed(bob, "GET", "/claims/"+q["quote_id"].(string), nil)
		want(t, r, 200, "")
		if st := r.Map(t); st["status"] != "paid" || st["claim"].(map[string]any)["preimage"] != res["preimage"] {
			t.Fatalf("the claim's status: %v", st)
		}
	})

	t.Run("lightning address from the profile", func(t *testing.T) {
		carol := e.newUser("carol", theMint, nil)
		e.publishProfile(carol, map[string]any{"name": "carol", "lud16": carol.address}, time.Now())
		m := e.login(carol)
		if m["user"].(map[string]any)["lud16"] != carol.address {
			t.Fatalf("login %v", m)
		}
		q := e.quote(carol, map[string]any{"method": "lightning_address"})
		if q["destination"] != carol.address {
			t.Fatalf("quote %v", q)
		}
		r := e.as(carol, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"]})
		want(t, r, 200, "")
		amount := paid(t, r.Map(t))
		if got := carol.mintQuote(t, carol.lastLNQuote(t)); int64(got) != amount {
			t.Fatalf("carol minted %d of %d", got, amount)
		}
	})

	t.Run("npub login", func(t *testing.T) {
		dave := e.newUser("dave", theMint, nil)
		e.publishProfile(dave, map[string]any{"name": "dave", "lud16": dave.address}, time.Now())
		m := e.loginNPub(dave)
		if m["login_method"] != "npub" || num(m["expires_at"]) != e.clock.Now().Unix()+3600 {
			t.Fatalf("npub login %v", m)
		}
		for _, body := range []map[string]any{{"method": "cashu"}, {"method": "bolt11"},
			{"method": "lightning_address", "lightning_address": "thief@" + e.ln.Domain}} {
			want(t, e.as(dave, "POST", "/claim/quote", body), 403, "npub_session_restricted")
		}
		q := e.quote(dave, map[string]any{"method": "lightning_address", "lightning_address": strings.ToUpper(dave.address)})
		r := e.as(dave, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"]})
		want(t, r, 200, "")
		amount := paid(t, r.Map(t))
		if got := dave.mintQuote(t, dave.lastLNQuote(t)); int64(got) != amount {
			t.Fatalf("dave minted %d of %d", got, amount)
		}

		erin := e.newUser("erin", theMint, map[string]any{"name": "erin"})
		e.loginNPub(erin)
		want(t, e.as(erin, "POST", "/claim/quote", map[string]any{"method": "lightning_address"}), 422, "no_lightning_address")
		el := e.as(erin, "GET", "/auth/me", nil).Map(t)
		if el["login_method"] != "npub" || !strings.Contains(strings.Join(strs(el["eligibility"].(map[string]any)["reasons"]), ","), "no_lightning_address") {
			t.Fatalf("me %v", el)
		}
		// Publishing a lud16 and refreshing fixes it.
		e.publishProfile(erin, map[string]any{"name": "erin", "lud16": erin.address}, time.Now().Add(time.Second))
		r = e.as(erin, "POST", "/user/refresh-profile", nil)
		want(t, r, 200, "")
		if r.Map(t)["lud16"] != erin.address {
			t.Fatalf("refreshed profile %s", r.Body)
		}
		want(t, e.as(erin, "POST", "/user/refresh-profile", nil), 429, "rate_limit_exceeded")
		e.quote(erin, map[string]any{"method": "lightning_address"})
	})

	t.Run("deposits", func(t *testing.T) {
		r := api.Do("GET", "/deposit", nil)
		want(t, r, 200, "")
		if d := r.Map(t); d["invoice"] != nil || d["quote_id"] != nil || d["mint_url"] != theMint.URL {
			t.Fatalf("deposit info %v", d)
		}
		r = api.Do("GET", "/deposit?amount=700", nil)
		want(t, r, 200, "")
		d := r.Map(t)
		if !strings.HasPrefix(d["invoice"].(string), "lntbs7u1") || !strings.HasPrefix(d["quote_id"].(string), "d_") || num(d["amount_sats"]) != 700 {
			t.Fatalf("deposit invoice %v", d)
		}
		before := e.stats()
		want(t, api.Do("POST", "/deposit/simulate-payment", map[string]any{"invoice": d["invoice"]}), 200, "")
		balance += 700
		testkit.WaitFor(t, 10*time.Second, "the deposit to be minted", func() bool { return num(e.stats()["balance_sats"]) == balance })
		after := e.stats()
		if num(after["total_deposited_sats"]) != num(before["total_deposited_sats"])+700 || num(after["deposits_count"]) != num(before["deposits_count"])+1 {
			t.Fatalf("stats %v after %v", after, before)
		}

		frank := e.newUser("frank", theMint, nil)
		if err := minttest.Fund(theMint, frank.w, 100); err != nil {
			t.Fatal(err)
		}
		proofs, err := frank.w.Send(60, theMint.URL, true)
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := cashu.NewTokenV4(proofs, theMint.URL, cashu.Sat, false)
		s, _ := tok.Serialize()
		r = api.Do("POST", "/deposit/redeem-ecash", map[string]any{"token": s})
		want(t, r, 200, "")
		balance += 60
		if res := r.Map(t); num(res["amount_sats"]) != 60 || num(res["fee_sats"]) != 0 || num(res["balance_sats"]) != balance || res["mint_url"] != theMint.URL {
			t.Fatalf("redeem %v", res)
		}
		want(t, api.Do("POST", "/deposit/redeem-ecash", map[string]any{"token": s}), 409, "token_already_spent")
	})

	st := e.stats()
	if num(st["total_claims"]) != 4 || num(st["claims_24h"]) != 4 || num(st["paid_24h_sats"]) != num(st["total_paid_sats"]) || num(st["pending_claims"]) != 0 {
		t.Fatalf("stats at the end %v", st)
	}
	api.AssertAllReached()
}

func oneOf(v int64, set ...int64) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
