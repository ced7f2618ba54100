package faucetapi_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

// TestConcurrentConfirms: 20 confirms of one quote at once pay once.
func TestConcurrentConfirms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, func(c *faucet.Config) { c.FixedSats = 25 })
	for _, method := range []string{"cashu", "bolt11"} {
		t.Run(method, func(t *testing.T) {
			u := e.newUser("racer-"+method, elsewhere, nil)
			e.login(u)
			q := e.quote(u, map[string]any{"method": method})
			body := map[string]any{"quote_id": q["quote_id"]}
			var mintQuote string
			if method == "bolt11" {
				body["bolt11"], mintQuote = u.invoice(t, 25)
			}
			before := num(e.stats()["balance_sats"])
			var wg sync.WaitGroup
			results := make(chan *apitest.Response, 20)
			start := make(chan struct{})
			for range 20 {
				wg.Go(func() {
					<-start
					results <- e.as(u, "POST", "/claim/confirm", body)
				})
			}
			close(start)
			wg.Wait()
			close(results)
			// One claim pays; a confirm that comes while it is paying is
			// 409, one that comes after it is answered with its result.
			codes, claims := map[int]int{}, map[any]bool{}
			for r := range results {
				codes[r.Status]++
				if r.Status == 409 && r.ErrorCode() != "quote_already_used" {
					t.Errorf("409 %s", r.Body)
				}
				if r.Status == 200 {
					res := r.Map(t)
					claims[fmt.Sprint(res["claim_id"], res["token"], res["preimage"])] = true
				}
			}
			if codes[200] < 1 || codes[200]+codes[409] != 20 || len(claims) != 1 {
				t.Fatalf("statuses %v, %d claims answered; want 200s of one claim and 409s", codes, len(claims))
			}
			if after := num(e.stats()["balance_sats"]); after != before-25 {
				t.Fatalf("balance %d → %d: paid more than once", before, after)
			}
			if method == "bolt11" {
				if got := u.mintQuote(t, mintQuote); got != 25 {
					t.Fatalf("minted %d", got)
				}
			}
		})
	}
	if st := e.stats(); num(st["total_claims"]) != 2 || num(st["total_paid_sats"]) != 50 {
		t.Fatalf("stats %v", st)
	}
}

func forceOutcome(t *testing.T, s lightning.State) {
	theMint.Node.SetOutcome(func(string) lightning.State { return s })
	t.Cleanup(func() { theMint.Node.SetOutcome(nil) })
}

// TestFailedAndPendingPayments: a failed payment releases the cooldown and
// the budget; a pending one keeps them until the background job learns the
// outcome, also after a restart. Not in parallel: forceOutcome sets the
// outcome of every payment theMint's node makes, other tests' too.
func TestFailedAndPendingPayments(t *testing.T) {
	e := newEnv(t, 2000, func(c *faucet.Config) { c.FixedSats, c.DailyBudgetSats = 30, 1000 })
	u := e.newUser("payee", elsewhere, nil)
	e.login(u)

	t.Run("failed", func(t *testing.T) {
		forceOutcome(t, lightning.Failed)
		q := e.quote(u, map[string]any{"method": "bolt11"})
		invoice, _ := u.invoice(t, 30)
		r := e.as(u, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": invoice})
		want(t, r, 502, "payment_failed")
		if !strings.Contains(string(r.Body), `"claim_id":"c_`) || !strings.Contains(string(r.Body), `"status":"failed"`) {
			t.Fatalf("failure answer %s", r.Body)
		}
		if st := e.stats(); num(st["balance_sats"]) != 2000 || num(st["daily_spent_sats"]) != 0 || num(st["total_claims"]) != 0 {
			t.Fatalf("after a failure: %v", st)
		}
		theMint.Node.SetOutcome(nil)
		// The cooldown was released: the user may claim again at once.
		q = e.quote(u, map[string]any{"method": "bolt11"})
		invoice, mq := u.invoice(t, 30)
		want(t, e.as(u, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": invoice}), 200, "")
		if got := u.mintQuote(t, mq); got != 30 {
			t.Fatalf("minted %d", got)
		}
	})

	pending := func(t *testing.T, who *user) (invoice, mintQuote string, claim map[string]any) {
		t.Helper()
		forceOutcome(t, lightning.Pending)
		q := e.quote(who, map[string]any{"method": "bolt11"})
		invoice, mintQuote = who.invoice(t, 30)
		r := e.as(who, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": invoice})
		want(t, r, 202, "")
		claim = r.Map(t)
		if claim["status"] != "pending" || claim["preimage"] != nil || claim["fee_sats"] != nil || claim["paid_at"] != nil {
			t.Fatalf("pending answer %v", claim)
		}
		theMint.Node.SetOutcome(nil)
		r = e.as(who, "POST", "/claim/quote", map[string]any{"method": "cashu"})
		want(t, r, 429, "rate_limit_exceeded") // a pending claim keeps its cooldown
		if st := e.stats(); num(st["pending_claims"]) != 1 {
			t.Fatalf("stats %v", st)
		}
		return invoice, mintQuote, claim
	}

	t.Run("pending, then paid", func(t *testing.T) {
		v := e.newUser("patient", elsewhere, nil)
		e.login(v)
		before := e.stats()
		invoice, mq, _ := pending(t, v)
		if err := theMint.Node.ResolvePending(invoice, true); err != nil {
			t.Fatal(err)
		}
		e.svc.Kick()
		testkit.WaitFor(t, 10*time.Second, "the pending claim to be settled", func() bool { return num(e.stats()["pending_claims"]) == 0 })
		after := e.stats()
		if num(after["total_claims"]) != num(before["total_claims"])+1 || num(after["total_paid_sats"]) != num(before["total_paid_sats"])+30 {
			t.Fatalf("stats %v → %v", before, after)
		}
		if got := v.mintQuote(t, mq); got != 30 {
			t.Fatalf("minted %d", got)
		}
	})

	t.Run("pending, then failed", func(t *testing.T) {
		w := e.newUser("unlucky", elsewhere, nil)
		e.login(w)
		before := num(e.stats()["balance_sats"])
		invoice, _, _ := pending(t, w)
		if err := theMint.Node.ResolvePending(invoice, false); err != nil {
			t.Fatal(err)
		}
		e.svc.Kick()
		testkit.WaitFor(t, 10*time.Second, "the pending claim to fail", func() bool { return num(e.stats()["pending_claims"]) == 0 })
		// The wallet took its ecash back, and the cooldown is gone.
		testkit.WaitFor(t, 10*time.Second, "the balance to come back", func() bool { return num(e.stats()["balance_sats"]) == before })
		e.quote(w, map[string]any{"method": "cashu"})
	})

	t.Run("pending across a restart", func(t *testing.T) {
		x := e.newUser("restarted", elsewhere, nil)
		e.login(x)
		invoice, mq, _ := pending(t, x)
		e.stop() // the process goes away with the payment in flight
		if err := theMint.Node.ResolvePending(invoice, true); err != nil {
			t.Fatal(err)
		}
		e.build(e.relayForRestart(), e.logger())
		testkit.WaitFor(t, 10*time.Second, "the restarted faucet to settle the claim", func() bool { return num(e.stats()["pending_claims"]) == 0 })
		if got := x.mintQuote(t, mq); got != 30 {
			t.Fatalf("minted %d", got)
		}
		want(t, e.as(x, "POST", "/claim/quote", map[string]any{"method": "cashu"}), 429, "rate_limit_exceeded")
	})
}

// signetInvoice makes a real invoice that no node of the test network issued.
func invoiceOn(t *testing.T, params *chaincfg.Params, sats int64, at time.Time) string {
	t.Helper()
	var hash [32]byte
	rand.Read(hash[:])
	inv, err := zpay32.NewInvoice(params, hash, at, zpay32.Description("x"), zpay32.Amount(lnwire.MilliSatoshi(sats*1000)))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := secp256k1.GeneratePrivateKey()
	s, err := inv.Encode(zpay32.MessageSigner{SignCompact: func(m []byte) ([]byte, error) { return ecdsa.SignCompact(key, m, true) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBadClaims: every refusal has its documented code and changes nothing.
func TestBadClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1000, func(c *faucet.Config) { c.FixedSats = 20 })
	u := e.newUser("u", theMint, nil)
	other := e.newUser("other", theMint, nil)
	e.login(u)
	e.login(other)
	q := e.quote(u, map[string]any{"method": "bolt11"})
	id := q["quote_id"]
	good, _ := u.invoice(t, 20)

	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no bolt11", map[string]any{"quote_id": id}, 400, "invalid_request"},
		{"garbage bolt11", map[string]any{"quote_id": id, "bolt11": "lnbc1garbage"}, 400, "invalid_bolt11"},
		{"not an invoice", map[string]any{"quote_id": id, "bolt11": "hello"}, 400, "invalid_bolt11"},
		{"mainnet invoice", map[string]any{"quote_id": id, "bolt11": invoiceOn(t, &chaincfg.MainNetParams, 20, time.Now())}, 422, "wrong_network"},
		{"testnet invoice", map[string]any{"quote_id": id, "bolt11": invoiceOn(t, &chaincfg.TestNet3Params, 20, time.Now())}, 422, "wrong_network"},
		{"regtest invoice", map[string]any{"quote_id": id, "bolt11": invoiceOn(t, &chaincfg.RegressionNetParams, 20, time.Now())}, 422, "wrong_network"},
		{"wrong amount", map[string]any{"quote_id": id, "bolt11": invoiceOn(t, &chaincfg.SigNetParams, 21, time.Now())}, 422, "invoice_amount_mismatch"},
		{"expired invoice", map[string]any{"quote_id": id, "bolt11": invoiceOn(t, &chaincfg.SigNetParams, 20, time.Now().Add(-2*time.Hour))}, 422, "invoice_expired"},
		{"unknown quote", map[string]any{"quote_id": "q_nope", "bolt11": good}, 404, "quote_not_found"},
		{"no quote id", map[string]any{"bolt11": good}, 400, "invalid_request"},
		{"quote id of the wrong type", map[string]any{"quote_id": 7}, 400, "invalid_field"},
		{"not json", "{", 400, "invalid_json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want(t, e.as(u, "POST", "/claim/confirm", c.body), c.status, c.code)
		})
	}
	t.Run("another user's quote", func(t *testing.T) {
		want(t, e.as(other, "POST", "/claim/confirm", map[string]any{"quote_id": id, "bolt11": good}), 404, "quote_not_found")
	})
	t.Run("a bolt11 on a cashu quote", func(t *testing.T) {
		cq := e.quote(other, map[string]any{"method": "cashu"})
		want(t, e.as(other, "POST", "/claim/confirm", map[string]any{"quote_id": cq["quote_id"], "bolt11": good}), 400, "invalid_request")
		// Changing the method keeps the amount and retires the old quote.
		bq := e.quote(other, map[string]any{"method": "bolt11"})
		if bq["quote_id"] == cq["quote_id"] || bq["amount_sats"] != cq["amount_sats"] {
			t.Fatalf("quotes %v then %v", cq, bq)
		}
		want(t, e.as(other, "POST", "/claim/confirm", map[string]any{"quote_id": cq["quote_id"]}), 410, "quote_expired")
	})
	t.Run("bad quote requests", func(t *testing.T) {
		for _, c := range []struct {
			body   any
			status int
			code   string
		}{
			{map[string]any{"method": "paypal"}, 400, "invalid_method"},
			{map[string]any{}, 400, "invalid_method"},
			{map[string]any{"method": 1}, 400, "invalid_field"},
			{map[string]any{"method": "cashu", "lightning_address": "a@b.example"}, 400, "invalid_request"},
			{map[string]any{"method": "lightning_address", "lightning_address": "not an address"}, 400, "invalid_lightning_address"},
			{map[string]any{"method": "lightning_address"}, 422, "no_lightning_address"},
			{map[string]any{"method": "lightning_address", "lightning_address": "nobody@" + e.ln.Domain}, 502, "lightning_address_unreachable"},
			{map[string]any{"method": "lightning_address", "lightning_address": "x@127.0.0.1:1"}, 502, "lightning_address_unreachable"},
			{strings.Repeat("x", 70<<10), 413, "request_too_large"},
		} {
			want(t, e.as(other, "POST", "/claim/quote", c.body), c.status, c.code)
		}
	})
	t.Run("an expired quote", func(t *testing.T) {
		e.clock.Add(121 * time.Second)
		want(t, e.as(u, "POST", "/claim/confirm", map[string]any{"quote_id": id, "bolt11": good}), 410, "quote_expired")
	})
	if st := e.stats(); num(st["balance_sats"]) != 1000 || num(st["total_claims"]) != 0 || num(st["daily_spent_sats"]) != 0 {
		t.Fatalf("refused claims changed the ledger: %v", st)
	}
}

// TestBadDeposits: malformed, spent, foreign and oversized tokens, and bad amounts.
func TestBadDeposits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, func(c *faucet.Config) { c.MaxTokenSats, c.DepositMaxSats = 500, 50_000 })
	payer := e.newUser("payer", theMint, nil)
	if err := minttest.Fund(theMint, payer.w, 1000); err != nil {
		t.Fatal(err)
	}
	stranger := e.newUser("stranger", elsewhere, nil)
	if err := minttest.Fund(elsewhere, stranger.w, 100); err != nil {
		t.Fatal(err)
	}
	token := func(u *user, mint string, sats uint64) string {
		proofs, err := u.w.Send(sats, mint, true)
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := cashu.NewTokenV3(proofs, mint, cashu.Sat, false)
		s, _ := tok.Serialize()
		return s
	}
	spent := token(payer, theMint.URL, 10)
	tok, _ := cashu.DecodeToken(spent)
	if _, err := e.newUser("spender", theMint, nil).w.Receive(tok, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"empty", map[string]any{"token": ""}, 400, "invalid_token"},
		{"short", map[string]any{"token": "cashu"}, 400, "invalid_token"},
		{"prefix only", map[string]any{"token": "cashuA"}, 400, "invalid_token"},
		{"garbage", map[string]any{"token": "cashuBgarbage!!"}, 400, "invalid_token"},
		{"not a token", map[string]any{"token": "hello there, sats please"}, 400, "invalid_token"},
		{"wrong type", map[string]any{"token": 5}, 400, "invalid_field"},
		{"spent elsewhere", map[string]any{"token": spent}, 409, "token_already_spent"},
		{"foreign mint", map[string]any{"token": token(stranger, elsewhere.URL, 20)}, 422, "mint_not_accepted"},
		{"over the cap", map[string]any{"token": token(payer, theMint.URL, 600)}, 422, "token_too_large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want(t, e.api.Do("POST", "/deposit/redeem-ecash", c.body), c.status, c.code)
		})
	}
	for q, code := range map[string]string{"0": "invalid_amount", "-5": "invalid_amount", "abc": "invalid_amount", "1.5": "invalid_amount", "60000": "amount_out_of_range"} {
		r := e.api.Do("GET", "/deposit?amount="+q, nil)
		if r.ErrorCode() != code {
			t.Errorf("amount=%s: %d %s, want %s", q, r.Status, r.Body, code)
		}
	}
	want(t, e.api.Do("POST", "/deposit/simulate-payment", map[string]any{"invoice": invoiceOn(t, &chaincfg.SigNetParams, 5, time.Now())}), 422, "invoice_not_payable")
	want(t, e.api.Do("POST", "/deposit/simulate-payment", map[string]any{"invoice": "nope"}), 400, "invalid_bolt11")
	if st := e.stats(); num(st["balance_sats"]) != 100 || num(st["deposits_count"]) != 1 {
		t.Fatalf("refused deposits changed the ledger: %v", st)
	}
}
