package faucetapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/ecashtest"
	"github.com/outpost-relay/outpost/internal/testkit/nutshelltest"
)

// Two Nutshell mints (v2 keysets, 100 ppk input fees, fee return) next to
// the gonuts ones: nutshell settles Lightning payments at once, pendingMint
// reports them pending until asked again.
var (
	nutshell, pendingMint *nutshelltest.Mint
	noNutshell            error
)

func startNutshells(dir string) {
	nutshells, err := nutshelltest.StartPair(dir)
	nutshell, pendingMint, noNutshell = nutshells.Settle, nutshells.Pending, err
	if noNutshell != nil && !errors.Is(noNutshell, nutshelltest.ErrNotInstalled) {
		panic(noNutshell)
	}
}

func stopNutshells() { nutshelltest.Pair{Settle: nutshell, Pending: pendingMint}.Stop() }

func needNutshell(t *testing.T) {
	t.Helper()
	if nutshell == nil || pendingMint == nil {
		testkit.Missing(t, "the Nutshell mint", noNutshell)
	}
}

// flowMint is a faucet's mint and what differs between mints.
type flowMint struct {
	name    string
	url     string
	network bolt11.Network
	test    bool // the embedded-test-mint mode: deposits are paid by simulate-payment
}

func flowMints(t *testing.T) []flowMint {
	out := []flowMint{{"gonuts", theMint.URL, bolt11.Signet, true}}
	if nutshell != nil {
		// FakeWallet's invoices are mainnet's (lnbc): its sats are fake anyway.
		out = append(out, flowMint{"nutshell", nutshell.URL, bolt11.Mainnet, false})
	} else {
		t.Logf("Nutshell mint not available (%v): gonuts only", noNutshell)
	}
	return out
}

// TestEveryFlow runs every money flow of the faucet against each mint:
// a deposit by invoice, claims paid as a token, to a bolt11 invoice and to
// a Lightning address, tokens redeemed as cashuA and cashuB (short keyset
// ids); then the ledger, the balance and what the mint says the wallet's
// proofs are worth agree to the sat.
func TestEveryFlow(t *testing.T) {
	t.Parallel()
	for _, m := range flowMints(t) {
		t.Run(m.name, func(t *testing.T) {
			e := newEnvMint(t, "", m.url, 0, func(c *faucet.Config) {
				c.Network = m.network
				if !m.test {
					c.TestMint = nil
				}
			})
			// Deposit by invoice.
			r := e.api.Do("GET", "/deposit?amount=3000", nil)
			want(t, r, 200, "")
			dep := r.Map(t)
			if m.test {
				want(t, e.api.Do("POST", "/deposit/simulate-payment", map[string]any{"invoice": dep["invoice"]}), 200, "")
			}
			e.svc.Kick()
			testkit.WaitFor(t, 30*time.Second, "the deposit to be minted", func() bool { return num(e.stats()["balance_sats"]) == 3000 })

			// A token claim.
			alice := e.newUser("alice", nil, nil)
			e.login(alice)
			q := e.quote(alice, map[string]any{"method": "cashu"})
			r = e.as(alice, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"]})
			want(t, r, 200, "")
			res := r.Map(t)
			tok := res["token"].(string)
			if !strings.HasPrefix(tok, "cashuB") || res["status"] != "paid" {
				t.Fatalf("token claim %v", res)
			}
			if got := ecashtest.NewPayee(t, m.url).Receive(tok); int64(got) != num(q["amount_sats"]) {
				t.Fatalf("alice received %d of %v", got, q["amount_sats"])
			}

			// A bolt11 claim.
			bob := e.newUser("bob", nil, nil)
			e.login(bob)
			bobWallet := ecashtest.NewPayee(t, m.url)
			q = e.quote(bob, map[string]any{"method": "bolt11"})
			inv, mq := bobWallet.Invoice(num(q["amount_sats"]))
			r = e.as(bob, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": inv})
			want(t, r, 200, "")
			res = r.Map(t)
			checkPreimage(t, res)
			if got := bobWallet.Collect(mq); int64(got) != num(q["amount_sats"]) {
				t.Fatalf("bob collected %d of %v", got, q["amount_sats"])
			}

			// A Lightning-address claim, logged in by npub.
			carolWallet := ecashtest.NewPayee(t, m.url)
			var carolQuote string
			addr := e.ln.Add("carol-"+m.name, func(sats int64) (string, error) {
				inv, q := carolWallet.Invoice(sats)
				carolQuote = q
				return inv, nil
			})
			carol := e.newUser("carol", nil, map[string]any{"name": "carol", "lud16": addr})
			e.loginNPub(carol)
			q = e.quote(carol, map[string]any{"method": "lightning_address"})
			r = e.as(carol, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"]})
			want(t, r, 200, "")
			checkPreimage(t, r.Map(t))
			if got := carolWallet.Collect(carolQuote); int64(got) != num(q["amount_sats"]) {
				t.Fatalf("carol collected %d of %v", got, q["amount_sats"])
			}

			// Tokens back to the faucet, both formats.
			donor := ecashtest.NewPayee(t, m.url)
			fundPayee(t, e, m, donor, 200)
			for _, v3 := range []bool{true, false} {
				tok := donor.Token(40, v3)
				r = e.api.Do("POST", "/deposit/redeem-ecash", map[string]any{"token": tok})
				want(t, r, 200, "")
				red := r.Map(t)
				// The donor's wallet adds the input fee the faucet pays to swap it.
				if num(red["amount_sats"]) != 40 {
					t.Fatalf("redeem of %s: %v", tok[:6], red)
				}
				want(t, e.api.Do("POST", "/deposit/redeem-ecash", map[string]any{"token": tok}), 409, "token_already_spent")
			}
			ledger(t, e)
		})
	}
}

// fundPayee gives a payee sats by a mint quote of its own.
func fundPayee(t *testing.T, e *env, m flowMint, p *ecashtest.Payee, sats int64) {
	t.Helper()
	inv, q := p.Invoice(sats)
	if m.test {
		want(t, e.api.Do("POST", "/deposit/simulate-payment", map[string]any{"invoice": inv}), 200, "")
	}
	p.Collect(q)
}

// checkPreimage: a preimage is reported only when it is the invoice's.
func checkPreimage(t *testing.T, res map[string]any) {
	t.Helper()
	if res["status"] != "paid" {
		t.Fatalf("claim %v", res)
	}
	pre, ok := res["preimage"].(string)
	if !ok {
		return // the mint gave none that matches (Nutshell's FakeWallet, internal settlements)
	}
	b, _ := hex.DecodeString(pre)
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != res["payment_hash"] {
		t.Fatalf("preimage %s does not hash to %v", pre, res["payment_hash"])
	}
}

// ledger checks that the books balance (deposits + the mint's surplus =
// balance + payouts + fees + in flight + quarantined + lost to the mint),
// and that the mint says the wallet's proofs are worth exactly the balance
// (NUT-07).
func ledger(t *testing.T, e *env) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "no claim pending", func() bool { return num(e.stats()["pending_claims"]) == 0 })
	st := e.stats()
	bal := num(st["balance_sats"])
	in := num(st["total_deposited_sats"]) + num(st["mint_surplus_sats"])
	out := bal + num(st["total_paid_sats"]) + num(st["total_fee_sats"]) + num(st["in_flight_sats"]) + num(st["quarantined_sats"]) + num(st["lost_to_mint_sats"])
	if in != out {
		t.Fatalf("the books do not balance: in %d, out %d: %v", in, out, st)
	}
	a, err := e.tr.Audit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a.UnspentSats != uint64(bal) || a.HeldSats != uint64(bal) {
		t.Fatalf("balance %d, the mint says %+v", bal, a)
	}
}

// TestPendingPayoutSettlesWithChange: a Lightning payout the mint reports
// pending (Nutshell with FAKEWALLET_PAY_INVOICE_STATE=PENDING) is answered
// 202; the background job learns it settled, the claim becomes paid, and
// the fee reserve the mint did not need comes back (NUT-08) to the sat.
func TestPendingPayoutSettlesWithChange(t *testing.T) {
	t.Parallel()
	needNutshell(t)
	e := newEnvMint(t, "", pendingMint.URL, 0, func(c *faucet.Config) { c.Network, c.TestMint, c.FixedSats = bolt11.Mainnet, nil, 50 })
	want(t, e.api.Do("GET", "/deposit?amount=1000", nil), 200, "")
	testkit.WaitFor(t, 30*time.Second, "the deposit", func() bool { return num(e.stats()["balance_sats"]) == 1000 })
	u := e.newUser("patient", nil, nil)
	e.login(u)
	payee := ecashtest.NewPayee(t, nutshell.URL) // another mint: a Lightning payment, not an internal one
	q := e.quote(u, map[string]any{"method": "bolt11"})
	inv, mq := payee.Invoice(50)
	r := e.as(u, "POST", "/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": inv})
	want(t, r, 202, "")
	if c := r.Map(t); c["status"] != "pending" {
		t.Fatalf("claim %v", c)
	}
	e.svc.Kick()
	testkit.WaitFor(t, 30*time.Second, "the claim to settle", func() bool { return num(e.stats()["pending_claims"]) == 0 })
	st := e.stats()
	// The melt spent one 64-sat proof (1 sat input fee) on 50 sats with a
	// fee reserve of 2; the mint charges at most the reserve as Lightning
	// fee and owes the rest (at least 11 sats) back. Uncollected, the fee
	// would be 14.
	fee := num(st["total_fee_sats"])
	if num(st["total_paid_sats"]) != 50 || fee < 1 || fee > 3 || num(st["balance_sats"]) != 1000-50-fee {
		t.Fatalf("stats %v", st)
	}
	if got := payee.Collect(mq); got != 50 {
		t.Fatalf("the payee collected %d", got)
	}
	ledger(t, e)
}

// TestMintTrouble: a mint that does not answer makes the faucet degraded
// and claims 503 mint_unavailable; a mint whose keyset id its keys do not
// derive makes it down and claims 502 mint_incompatible, with the reason.
func TestMintTrouble(t *testing.T) {
	t.Parallel()
	keys := map[string]string{"1": "03a40f20667ed53513075dc51e715ff2046cad64eb68960632269ba7f0210e38bc"}
	forged := "01" + strings.Repeat("cd", 32)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/info", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"name":"forger","nuts":{"12":{"supported":true}}}`))
	})
	mux.HandleFunc("/v1/keysets", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"keysets":[{"id":%q,"unit":"sat","active":true,"input_fee_ppk":0}]}`, forged)
	})
	mux.HandleFunc("/v1/keys/"+forged, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keysets": []any{map[string]any{"id": forged, "unit": "sat", "keys": keys}}})
	})
	forger := httptest.NewServer(mux)
	defer forger.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	for _, c := range []struct {
		mint, health, state, code string
		status                    int
	}{
		{forger.URL, "down", "incompatible", "mint_incompatible", 502},
		{gone.URL, "degraded", "unreachable", "mint_unavailable", 503},
	} {
		t.Run(c.state, func(t *testing.T) {
			e := newEnvMint(t, "", c.mint, 0, func(cf *faucet.Config) { cf.TestMint = nil })
			testkit.WaitFor(t, 30*time.Second, "the background job to ask the mint", func() bool {
				return e.api.Do("GET", "/health", nil).Map(t)["checks"].(map[string]any)["mint"] == c.state
			})
			h := e.api.Do("GET", "/health", nil)
			body := h.Map(t)
			reason, _ := body["reason"].(string)
			if body["status"] != c.health || reason == "" {
				t.Fatalf("health %d %s", h.Status, h.Body)
			}
			if c.state == "incompatible" && !strings.Contains(reason, "derive") {
				t.Fatalf("the reason does not say what is wrong: %s", reason)
			}
			u := e.newUser("u", nil, nil)
			e.login(u)
			r := e.as(u, "POST", "/claim/quote", map[string]any{"method": "cashu"})
			want(t, r, c.status, c.code)
			if c.state == "incompatible" && !strings.Contains(r.Map(t)["message"].(string), "derive") {
				t.Fatalf("the message does not say what is wrong: %s", r.Body)
			}
			r = e.api.Do("GET", "/deposit?amount=100", nil)
			want(t, r, c.status, c.code)
			me := e.as(u, "GET", "/auth/me", nil).Map(t)
			if !strings.Contains(fmt.Sprint(me["eligibility"]), c.code) {
				t.Fatalf("eligibility %v", me["eligibility"])
			}
		})
	}
}
