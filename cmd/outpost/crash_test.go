package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/ecashtest"
	"github.com/outpost-relay/outpost/internal/testkit/lnurltest"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

type claimant struct {
	sk, quote, method string
	bearer            []string
	code              int // the confirm's answer before the crash; 0: none
	token             string
}

// TestFaucetCrash: concurrent claims, the outpost process killed (SIGKILL)
// while it pays them, then restarted on the same data. No claim is paid
// twice, every claim ends paid or failed, later claims pay, every token
// handed out is good, and the wallet's balance is what the mint says its
// proofs are worth (NUT-07), to the sat. Against the gonuts mint and a
// Nutshell mint, both outside the killed process.
func TestFaucetCrash(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a minute or more of SIGKILLed payouts; faucet's TestCrashRecovery and TestStuckClaimsSettleWhileRunning cover recovery in-process, TestKillAtAnyInstant kills the binary")
	}
	t.Run("gonuts", func(t *testing.T) {
		m := minttest.Start(t, devmint.Options{InputFeePpk: 100})
		other := minttest.Start(t, devmint.Options{})
		crash(t, m.URL, "signet", func(inv string) {
			if err := m.Node.PayInvoice(inv); err != nil {
				t.Fatal(err)
			}
		}, other.URL)
	})
	t.Run("nutshell", func(t *testing.T) {
		mint, pend := sharedNutshells(t)
		// Invoices of the other mint: Lightning payments, which FakeWallet
		// takes 3 s to make.
		crash(t, mint.URL, "mainnet", func(string) {}, pend.URL)
	})
}

func crash(t *testing.T, mint, network string, pay func(invoice string), payeeMint string) {
	dir := t.TempDir()
	env := mintEnv(mint, map[string]string{"OUTPOST_FAUCET_NETWORK": network, "OUTPOST_FAUCET_FIXED_SATS": "21",
		"OUTPOST_FAUCET_LNURL_ALLOW_HTTP": "true", "OUTPOST_FAUCET_LNURL_ALLOW_PRIVATE": "true"})
	c := startChild(t, dir, env)
	f := c.url + "/faucet"
	_, dep := call(t, "GET", f+"/deposit?amount=5000", nil)
	pay(dep["invoice"].(string))
	testkit.WaitFor(t, 30*time.Second, "the deposit", func() bool { return stat(t, f, "balance_sats") == 5000 })
	c.stop(t)
	before := auditDataDir(t, dir, mint)
	t.Logf("before the crash: balance 5000 sats; the wallet holds %d proofs worth %d sats, the mint says %d of them (%d sats) are unspent",
		before.HeldProofs, before.HeldSats, before.UnspentProofs, before.UnspentSats)
	if before.HeldSats != 5000 || before.UnspentSats != 5000 {
		t.Fatalf("before: %+v", before)
	}

	c = startChild(t, dir, env)
	f = c.url + "/faucet"
	// Lightning addresses whose invoices are the payee's, at its mint.
	payee := ecashtest.NewPayee(t, payeeMint)
	ln := lnurltest.New(t)
	var users []*claimant
	for i := range 40 {
		u := &claimant{method: []string{"cashu", "cashu", "lightning_address", "bolt11"}[i%4]}
		u.sk, u.bearer = login(t, f)
		body := map[string]any{"method": u.method}
		if u.method == "lightning_address" {
			body["lightning_address"] = ln.Add(fmt.Sprint("user", i), func(sats int64) (string, error) {
				inv, _ := payee.Invoice(sats)
				return inv, nil
			})
		}
		code, q := call(t, "POST", f+"/claim/quote", body, u.bearer...)
		if code != 200 {
			t.Fatalf("quote %d %v", code, q)
		}
		u.quote = q["quote_id"].(string)
		users = append(users, u)
	}
	invoices := map[*claimant]string{}
	for _, u := range users {
		if u.method == "bolt11" {
			invoices[u], _ = payee.Invoice(21)
		}
	}
	// Token deposits taken in while the process dies: each one is booked
	// once (by its call, or from the wallet's record after the restart),
	// or never taken in; the books below must say which to the sat.
	depositor := ecashtest.NewPayee(t, mint)
	inv, dq := depositor.Invoice(300)
	pay(inv)
	depositor.Collect(dq)
	var tokens []string
	for range 6 {
		tokens = append(tokens, depositor.Token(30, false))
	}
	// Every confirm at once, the redeems once two are answered; the
	// process dies after the third answer, as redeems may be on their way.
	answers := make(chan struct{}, len(users))
	var wg sync.WaitGroup
	redeemed := make(chan int, len(tokens))
	redeem := func() {
		for _, tok := range tokens {
			wg.Go(func() {
				code, _, _ := tryCall("POST", f+"/deposit/redeem-ecash", map[string]any{"token": tok})
				redeemed <- code
			})
		}
	}
	for _, u := range users {
		wg.Go(func() {
			body := map[string]any{"quote_id": u.quote}
			if inv := invoices[u]; inv != "" {
				body["bolt11"] = inv
			}
			code, res, err := tryCall("POST", f+"/claim/confirm", body, u.bearer...)
			if err == nil {
				u.code = code
				if tok, ok := res["token"].(string); ok {
					u.token = tok
				}
				answers <- struct{}{}
			}
		})
	}
	for i := range 3 {
		select {
		case <-answers:
		case <-time.After(30 * time.Second):
			t.Fatal("no answers")
		}
		if i == 1 {
			redeem()
		}
	}
	c.kill()
	wg.Wait()
	close(redeemed)
	redeems := map[int]int{}
	for code := range redeemed {
		redeems[code]++
	}
	t.Logf("token deposits answered before the kill (0: none): %v", redeems)
	answered, codes := 0, map[int]int{}
	for _, u := range users {
		if u.code != 0 {
			answered++
			codes[u.code]++
		}
	}
	t.Logf("killed outpost (SIGKILL) with %d of %d confirms answered (statuses %v)", answered, len(users), codes)

	c = startChild(t, dir, env)
	f = c.url + "/faucet"
	testkit.WaitFor(t, 90*time.Second, "every claim to be settled", func() bool { return stat(t, f, "pending_claims") == 0 })
	counts := map[string]int{}
	receiver := ecashtest.NewPayee(t, mint)
	for _, u := range users {
		outcome, claimed := afterCrash(t, f, u, invoices[u])
		counts[outcome+" ("+u.method+")"]++
		counts[outcome]++
		if claimed {
			counts["claimed again"]++
		}
		if u.token != "" {
			if got := receiver.Receive(u.token); got != 21 {
				t.Fatalf("a token paid %d", got)
			}
		}
	}
	paid := counts["paid"] + counts["claimed again"]
	// Newcomers are paid too.
	for range 3 {
		_, bearer := login(t, f)
		_, q := call(t, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}, bearer...)
		if code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, bearer...); code != 200 || res["status"] != "paid" {
			t.Fatalf("a new claim after the crash: %d %v", code, res)
		}
	}
	if n := stat(t, f, "total_claims"); n != int64(paid+3) {
		t.Fatalf("%d claims recorded paid, want %d users paid (outcomes %v) + 3 new", n, paid, counts)
	}
	testkit.WaitFor(t, 20*time.Second, "no claim pending", func() bool { return stat(t, f, "pending_claims") == 0 })
	_, st := call(t, "GET", f+"/stats", nil)
	t.Logf("stats %v", st)
	balance, fees := stat(t, f, "balance_sats"), stat(t, f, "total_fee_sats")
	// The books balance to the sat (issue #24), with what the mint's
	// faults cost or gave, if anything.
	deposited := stat(t, f, "total_deposited_sats")
	in := deposited + stat(t, f, "mint_surplus_sats")
	out := balance + stat(t, f, "total_paid_sats") + fees + stat(t, f, "in_flight_sats") + stat(t, f, "quarantined_sats") + stat(t, f, "lost_to_mint_sats")
	c.stop(t)
	after := auditDataDir(t, dir, mint)
	t.Logf("after the crash: of %d claims, GET /claims said %v (a confirm repeated or a new quote claimed again where nothing was paid), 3 newcomers paid; "+
		"balance %d sats = %d deposited (5000 and the tokens taken in) - %d paid - %d fees; the wallet holds %d proofs worth %d sats, the mint says %d of them (%d sats) are unspent",
		len(users), counts, balance, deposited, 21*(paid+3), fees, after.HeldProofs, after.HeldSats, after.UnspentProofs, after.UnspentSats)
	if after.HeldSats != uint64(balance) || after.UnspentSats != after.HeldSats || after.UnspentProofs != after.HeldProofs {
		t.Fatalf("balance %d, the mint says %+v", balance, after)
	}
	if in != out {
		t.Fatalf("the books do not balance: in %d, out %d: %v", in, out, st)
	}
}

// afterCrash asks what became of u's claim (GET /claims/{quote_id}) as a
// wallet whose confirm was cut would, checks the answer against what the
// faucet does next — the confirm repeated answers the same outcome and
// never pays twice; a paid claim holds the cooldown and has what it paid
// with; one that paid nothing can be claimed again — and claims again
// where nothing was paid. claimed: a claim paid after the crash.
func afterCrash(t *testing.T, f string, u *claimant, invoice string) (outcome string, claimed bool) {
	t.Helper()
	_, st := call(t, "GET", f+"/claims/"+u.quote, nil, u.bearer...)
	outcome, _ = st["status"].(string)
	claim, _ := st["claim"].(map[string]any)
	if u.code == 200 && outcome != "paid" {
		t.Fatalf("a claim answered paid before the crash: %v", st)
	}
	code, r := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": u.quote, "bolt11": invoice}, u.bearer...)
	switch {
	case outcome == "paid" && code == 200 && r["claim_id"] == claim["claim_id"]:
		tok, _ := claim["token"].(string)
		if u.method == "cashu" && (tok == "" || r["token"] != tok || (u.token != "" && u.token != tok)) {
			t.Fatalf("a paid token payout: status %v, confirmed again %v, answered before %q", st, r, u.token)
		}
		u.token = tok // also where the kill lost the answer
	case outcome == "open" && code == 200 && r["status"] == "paid": // never taken, or failed having paid nothing
		if claim != nil {
			outcome = "open again" // its claim failed having paid nothing: given back
		}
		u.token, _ = r["token"].(string)
		claimed = true
	case (outcome == "failed" || outcome == "open") && code == 502, // paid nothing, and past its time, or failed again
		outcome == "expired" && code == 410 && claim == nil && (u.code == 0 || u.code >= 500), // never taken
		// failed having paid nothing, and its quote ran out while the restart settled it
		outcome == "expired" && code == 410 && claim["status"] == "failed" && (u.code == 0 || u.code >= 500):
	default:
		t.Fatalf("the claim's status %v, and confirming it again (answered %d before): %d %v", st, u.code, code, r)
	}
	code, q := call(t, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}, u.bearer...)
	switch {
	case code == 429 && (outcome == "paid" || claimed): // the cooldown holds
	case code == 200 && outcome != "paid" && !claimed: // nothing was paid and the cooldown released: claim again
		code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, u.bearer...)
		if code != 200 || res["status"] != "paid" {
			t.Fatalf("a later claim: %d %v", code, res)
		}
		u.token, claimed = res["token"].(string), true
	default:
		t.Fatalf("after the crash, a claim whose status is %v (answered %d before): quote %d %v", st, u.code, code, q)
	}
	return outcome, claimed
}
