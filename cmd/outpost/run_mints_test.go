package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/ecashtest"
	"github.com/outpost-relay/outpost/internal/testkit/lnurltest"
	"github.com/outpost-relay/outpost/internal/testkit/nutshelltest"
)

// Nutshell mints shared by this package's tests, started on first use:
// one whose Lightning payments settle at once, one whose payments stay
// pending until asked about.
var nutshells struct {
	once sync.Once
	dir  string
	nutshelltest.Pair
	err error
}

func sharedNutshells(t *testing.T) (settle, pend *nutshelltest.Mint) {
	t.Helper()
	nutshells.once.Do(func() {
		dir, err := os.MkdirTemp("", "outpost-nutshell")
		if err != nil {
			nutshells.err = err
			return
		}
		nutshells.dir = dir
		nutshells.Pair, nutshells.err = nutshelltest.StartPair(dir)
	})
	if errors.Is(nutshells.err, nutshelltest.ErrNotInstalled) {
		testkit.Missing(t, "the Nutshell mint", nutshells.err)
	}
	if nutshells.err != nil {
		t.Fatal(nutshells.err)
	}
	return nutshells.Settle, nutshells.Pending
}

func TestMain(m *testing.M) {
	// The whole-program tests wait far more than they compute: six at a
	// time took 13-16 s under -short, four 18 s, eight 17-18 s (the same
	// CPU, 14-15 s), on two cores with a load of 2-3 beside.
	testkit.ShortParallel(6)
	code := m.Run()
	nutshells.Stop()
	if nutshells.dir != "" {
		os.RemoveAll(nutshells.dir)
	}
	if binary.path != "" {
		os.RemoveAll(filepath.Dir(binary.path))
	}
	os.Exit(code)
}

// mintEnv is the faucet's settings for an external mint.
func mintEnv(mint string, extra map[string]string) map[string]string {
	env := map[string]string{
		"OUTPOST_FAUCET_MINT_URL": mint, "OUTPOST_FAUCET_NETWORK": "mainnet", // FakeWallet's invoices are lnbc
		"OUTPOST_FAUCET_POLL_INTERVAL": "100ms", "OUTPOST_FAUCET_IP_LIMIT": "0", "OUTPOST_FAUCET_SITEWIDE_LIMIT": "0",
		"OUTPOST_FAUCET_MIN_BALANCE": "0", "OUTPOST_FAUCET_DAILY_BUDGET": "0",
		"OUTPOST_FAUCET_LNURL_ALLOW_HTTP": "true", "OUTPOST_FAUCET_LNURL_ALLOW_PRIVATE": "true",
		"OUTPOST_TRUSTED_PROXIES": "127.0.0.1/32",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// auditDataDir asks the mint about every proof in a stopped outpost's
// wallet (NUT-07).
func auditDataDir(t *testing.T, dir, mint string) ecash.Audit {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, _ := treasury.NormalizeMintURL(mint)
	w, err := ecash.Open(ecash.Config{DB: st.DB, MintURL: n, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := w.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func stat(t *testing.T, f, key string) int64 {
	t.Helper()
	_, st := call(t, "GET", f+"/stats", nil)
	v, _ := st[key].(float64)
	return int64(v)
}

// checkLedger: balance = deposits - payouts - fees, nothing pending.
func checkLedger(t *testing.T, f string) int64 {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, "no claim pending", func() bool { return stat(t, f, "pending_claims") == 0 })
	_, st := call(t, "GET", f+"/stats", nil)
	n := func(k string) int64 { v, _ := st[k].(float64); return int64(v) }
	if n("balance_sats") != n("total_deposited_sats")-n("total_paid_sats")-n("total_fee_sats") {
		t.Fatalf("ledger does not add up: %v", st)
	}
	return n("balance_sats")
}

// login returns the headers of a new NIP-98 user's session, from a client
// address of its own (outpost trusts X-Forwarded-For from 127.0.0.1 here).
func login(t *testing.T, f string) (sk string, headers []string) {
	t.Helper()
	sk = nostr.GeneratePrivateKey()
	ip := fmt.Sprintf("10.%d.%d.%d", rand.IntN(250), rand.IntN(250), 1+rand.IntN(250))
	code, m := signedCall(t, sk, "POST", f+"/auth/login", nil, "X-Forwarded-For", ip)
	if code != 200 {
		t.Fatalf("login %d %v", code, m)
	}
	return sk, []string{"Authorization", "Bearer " + m["token"].(string), "X-Forwarded-For", ip}
}

// TestFaucetNutshell runs outpost against a real Nutshell mint (v2
// keysets, input fees): every flow, a restart, and a payout that settles
// later with its fee return, at a second mint.
func TestFaucetNutshell(t *testing.T) {
	t.Parallel()
	mint, pend := sharedNutshells(t)
	dir := t.TempDir()
	inst := start(t, dir, mintEnv(mint.URL, nil))
	f := inst.url + "/faucet"
	if _, cfg := call(t, "GET", f+"/config", nil); cfg["mint_url"] != mint.URL || cfg["test_mint"] != false {
		t.Fatalf("config %v", cfg)
	}
	testkit.WaitFor(t, 20*time.Second, "the mint to be checked", func() bool {
		_, h := call(t, "GET", f+"/health", nil)
		return h["status"] == "ok" && h["checks"].(map[string]any)["mint"] == "ok"
	})
	// Deposit by invoice: FakeWallet pays its own invoices.
	if code, dep := call(t, "GET", f+"/deposit?amount=4000", nil); code != 200 || dep["invoice"] == nil {
		t.Fatalf("deposit %d %v", code, dep)
	}
	testkit.WaitFor(t, 20*time.Second, "the deposit", func() bool { return stat(t, f, "balance_sats") == 4000 })

	// Token claim.
	_, bearer := login(t, f)
	_, q := call(t, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}, bearer...)
	code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, bearer...)
	if code != 200 || res["status"] != "paid" {
		t.Fatalf("confirm %d %v", code, res)
	}
	if got := ecashtest.NewPayee(t, mint.URL).Receive(res["token"].(string)); float64(got) != q["amount_sats"] {
		t.Fatalf("received %d of %v", got, q["amount_sats"])
	}
	// bolt11 claim.
	_, bearer = login(t, f)
	bob := ecashtest.NewPayee(t, mint.URL)
	_, q = call(t, "POST", f+"/claim/quote", map[string]any{"method": "bolt11"}, bearer...)
	inv, mq := bob.Invoice(int64(q["amount_sats"].(float64)))
	if code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": inv}, bearer...); code != 200 || res["status"] != "paid" {
		t.Fatalf("bolt11 confirm %d %v", code, res)
	}
	if got := bob.Collect(mq); float64(got) != q["amount_sats"] {
		t.Fatalf("bob got %d", got)
	}
	// Lightning address of an npub login's profile.
	ln := lnurltest.New(t)
	carol := ecashtest.NewPayee(t, mint.URL)
	var carolQuote string
	addr := ln.Add("carol", func(sats int64) (string, error) {
		inv, q := carol.Invoice(sats)
		carolQuote = q
		return inv, nil
	})
	carolSK := nostr.GeneratePrivateKey()
	carolPK, _ := nostr.GetPublicKey(carolSK)
	profile := nostr.Event{Kind: 0, CreatedAt: nostr.Now(), Content: `{"name":"carol","lud16":"` + addr + `"}`, Tags: nostr.Tags{}}
	profile.Sign(carolSK)
	publishWS(t, inst, profile)
	_, l := call(t, "POST", f+"/auth/login-npub", map[string]any{"npub": pubkey.NPub(carolPK)})
	bearer = []string{"Authorization", "Bearer " + l["token"].(string)}
	_, q = call(t, "POST", f+"/claim/quote", map[string]any{"method": "lightning_address"}, bearer...)
	if code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, bearer...); code != 200 || res["status"] != "paid" {
		t.Fatalf("lightning address confirm %d %v", code, res)
	}
	if got := carol.Collect(carolQuote); float64(got) != q["amount_sats"] {
		t.Fatalf("carol got %d", got)
	}
	// Tokens in, cashuA and cashuB (short keyset ids).
	donor := ecashtest.NewPayee(t, mint.URL)
	_, dq := donor.Invoice(300)
	donor.Collect(dq)
	for _, v3 := range []bool{true, false} {
		tok := donor.Token(50, v3)
		if code, r := call(t, "POST", f+"/deposit/redeem-ecash", map[string]any{"token": tok}); code != 200 || r["amount_sats"] != 50.0 {
			t.Fatalf("redeem %s: %d %v", tok[:6], code, r)
		}
		if code, r := call(t, "POST", f+"/deposit/redeem-ecash", map[string]any{"token": tok}); code != 409 || r["error"] != "token_already_spent" {
			t.Fatalf("again: %d %v", code, r)
		}
	}
	balance := checkLedger(t, f)

	// A restart keeps everything.
	inst.shutdown(t)
	inst.done = make(chan error, 1)
	inst.done <- nil
	if a := auditDataDir(t, dir, mint.URL); a.HeldSats != uint64(balance) || a.UnspentSats != a.HeldSats {
		t.Fatalf("balance %d, the mint says %+v", balance, a)
	}
	inst = start(t, dir, mintEnv(mint.URL, nil))
	f = inst.url + "/faucet"
	if b := checkLedger(t, f); b != balance || stat(t, f, "total_claims") != 3 {
		t.Fatalf("after the restart: balance %d (was %d)", b, balance)
	}

	// At a mint whose payments stay pending: 202, then paid with the
	// unused fee reserve back.
	pinst := start(t, t.TempDir(), mintEnv(pend.URL, map[string]string{"OUTPOST_FAUCET_FIXED_SATS": "50"}))
	pf := pinst.url + "/faucet"
	call(t, "GET", pf+"/deposit?amount=1000", nil)
	testkit.WaitFor(t, 20*time.Second, "the deposit", func() bool { return stat(t, pf, "balance_sats") == 1000 })
	_, bearer = login(t, pf)
	_, q = call(t, "POST", pf+"/claim/quote", map[string]any{"method": "bolt11"}, bearer...)
	inv, _ = ecashtest.NewPayee(t, mint.URL).Invoice(50)
	if code, res := call(t, "POST", pf+"/claim/confirm", map[string]any{"quote_id": q["quote_id"], "bolt11": inv}, bearer...); code != 202 || res["status"] != "pending" {
		t.Fatalf("pending confirm %d %v", code, res)
	}
	checkLedger(t, pf)
	if fee := stat(t, pf, "total_fee_sats"); stat(t, pf, "total_paid_sats") != 50 || fee < 1 || fee > 3 {
		t.Fatalf("fee %d: the fee reserve was not returned", fee)
	}
}
