package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/wallet"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/lnurltest"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

// publishWS sends ev to the instance's relay on a websocket of its own and
// waits for the OK. The go-nostr clients of connect() race with themselves
// once their proxied connection is dropped, which happens to a client left
// idle for longer than its 29-second ping; this test's events need no
// long-lived client.
func publishWS(t *testing.T, inst *instance, ev nostr.Event) {
	t.Helper()
	publishTo(t, inst.ws, ev)
}

// signedCall calls the faucet with a NIP-98 header for this request.
func signedCall(t *testing.T, sk, method, url string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	var raw []byte
	var send any // call() marshals what it is given: nil must stay nil
	if body != nil {
		raw, _ = json.Marshal(body)
		send = json.RawMessage(raw)
	}
	h, err := nip98.Sign(sk, method, url, raw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return call(t, method, url, send, append([]string{"Authorization", h}, headers...)...)
}

// TestFaucetEmbeddedMint runs outpost with no mint configured: it starts its
// own test mint, funds the faucet, and the claim flow works out of the box,
// also after a restart on the same data dir.
func TestFaucetEmbeddedMint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{
		"OUTPOST_FAUCET_POLL_INTERVAL": "100ms", "OUTPOST_FAUCET_TEST_MINT_FUNDING": "20000",
		"OUTPOST_FAUCET_LNURL_ALLOW_HTTP": "true", "OUTPOST_FAUCET_LNURL_ALLOW_PRIVATE": "true",
		// Spelled as no directory would: default port, trailing dots, capitals.
		"OUTPOST_FAUCET_ACCEPTED_MINTS": "https://Other-Mint.Example:443/, https://third.example.:443/cashu/",
	}
	inst := start(t, dir, env)
	f := inst.url + "/faucet"

	_, cfg := call(t, "GET", f+"/config", nil)
	mintURL, _ := cfg["mint_url"].(string)
	if cfg["test_mint"] != true || !strings.HasPrefix(mintURL, "http://127.0.0.1:") {
		t.Fatalf("config %v", cfg)
	}
	// The accepted mints are spelled as the mint directory spells them, so
	// both agree on which mint a URL means.
	_, info := call(t, "GET", f+"/deposit", nil)
	if got := fmt.Sprint(info["accepted_mints"]); got != "["+mintURL+" https://other-mint.example https://third.example/cashu]" {
		t.Fatalf("accepted mints %s", got)
	}
	if _, st := call(t, "GET", f+"/stats", nil); st["balance_sats"] != 20000.0 {
		t.Fatalf("stats %v", st)
	}
	if code, h := call(t, "GET", inst.url+"/health", nil); code != 200 || h["checks"].(map[string]any)["faucet"].(map[string]any)["status"] != "ok" {
		t.Fatalf("health %d %v", code, h)
	}
	userWallet := func() *wallet.Wallet { return minttest.Wallet(t, mintURL) }

	// A NIP-98 login made with "outpost nip98 sign", then a token claim.
	sk := nostr.GeneratePrivateKey()
	var header bytes.Buffer
	if err := run(context.Background(), []string{"nip98", "sign", f + "/auth/login"}, func(k string) string {
		return map[string]string{"OUTPOST_NSEC": sk}[k]
	}, nil, &header, io.Discard); err != nil {
		t.Fatal(err)
	}
	code, login := call(t, "POST", f+"/auth/login", nil, "Authorization", strings.TrimSpace(header.String()))
	if code != 200 || login["login_method"] != "nip98" {
		t.Fatalf("login %d %v", code, login)
	}
	bearer := []string{"Authorization", "Bearer " + login["token"].(string)}
	_, q := call(t, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}, bearer...)
	code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, bearer...)
	if code != 200 || res["status"] != "paid" {
		t.Fatalf("confirm %d %v", code, res)
	}
	keptToken := res["token"].(string) // redeemed after the restart

	// A Lightning address of the user's profile, served on 127.0.0.1.
	ln := lnurltest.New(t)
	carol := userWallet()
	var lnQuote string
	addr := ln.Add("carol", func(sats int64) (string, error) {
		mq, err := carol.RequestMint(uint64(sats), mintURL)
		if err != nil {
			return "", err
		}
		lnQuote = mq.Quote
		return mq.Request, nil
	})
	carolSK := nostr.GeneratePrivateKey()
	carolPK, _ := nostr.GetPublicKey(carolSK)
	profile := nostr.Event{Kind: 0, CreatedAt: nostr.Now(), Content: `{"name":"carol","lud16":"` + addr + `"}`, Tags: nostr.Tags{}}
	profile.Sign(carolSK)
	publishWS(t, inst, profile)
	code, login = call(t, "POST", f+"/auth/login-npub", map[string]any{"npub": pubkey.NPub(carolPK)})
	if code != 200 || login["user"].(map[string]any)["lud16"] != addr {
		t.Fatalf("npub login %d %v", code, login)
	}
	bearer = []string{"Authorization", "Bearer " + login["token"].(string)}
	if code, _ := call(t, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}, bearer...); code != 403 {
		t.Fatalf("an npub session claiming a token: %d", code)
	}
	_, q = call(t, "POST", f+"/claim/quote", map[string]any{"method": "lightning_address"}, bearer...)
	code, res = call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, bearer...)
	if code != 200 || res["status"] != "paid" {
		t.Fatalf("confirm %d %v", code, res)
	}
	if n, err := carol.MintTokens(lnQuote); err != nil || float64(n) != res["amount_sats"] {
		t.Fatalf("carol minted %d of %v: %v", n, res["amount_sats"], err)
	}

	// A deposit invoice, paid through the embedded mint's simulated network.
	_, dep := call(t, "GET", f+"/deposit?amount=1234", nil)
	if code, _ := call(t, "POST", f+"/deposit/simulate-payment", map[string]any{"invoice": dep["invoice"]}); code != 200 {
		t.Fatalf("simulate-payment: %d", code)
	}
	testkit.WaitFor(t, 10*time.Second, "the deposit", func() bool {
		_, st := call(t, "GET", f+"/stats", nil)
		return st["total_deposited_sats"] == 20000.0+1234
	})
	_, before := call(t, "GET", f+"/stats", nil)

	// Restart on the same data dir: same mint URL and keys, same ledger.
	inst.shutdown(t)
	inst.done = make(chan error, 1)
	inst.done <- nil
	inst2 := start(t, dir, env)
	f = inst2.url + "/faucet"
	_, cfg = call(t, "GET", f+"/config", nil)
	_, after := call(t, "GET", f+"/stats", nil)
	if cfg["mint_url"] != mintURL || after["balance_sats"] != before["balance_sats"] || after["total_claims"] != 2.0 {
		t.Fatalf("after the restart: %v %v (before %v)", cfg["mint_url"], after, before)
	}
	tok, _ := cashu.DecodeToken(keptToken)
	if n, err := userWallet().Receive(tok, false); err != nil || n == 0 {
		t.Fatalf("a token paid before the restart: %d, %v", n, err)
	}
	if code, m := signedCall(t, sk, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}); code != 429 || m["details"].(map[string]any)["reason"] != "cooldown" {
		t.Fatalf("the cooldown after the restart: %d %v", code, m)
	}
}

func TestFaucetBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for env, want := range map[string]string{
		"OUTPOST_FAUCET_NETWORK=bitcoin":             "OUTPOST_FAUCET_NETWORK",
		"OUTPOST_FAUCET_MINT_URL=ftp://mint":         "OUTPOST_FAUCET_MINT_URL",
		"OUTPOST_FAUCET_AMOUNTS=10:50,x":             "OUTPOST_FAUCET_AMOUNTS",
		"OUTPOST_FAUCET_AMOUNTS=10:0":                "OUTPOST_FAUCET_AMOUNTS",
		"OUTPOST_FAUCET_PROFILE_RELAYS=http://relay": "OUTPOST_FAUCET_PROFILE_RELAYS",
		"OUTPOST_FAUCET_ACCEPTED_MINTS=mint":         "OUTPOST_FAUCET_ACCEPTED_MINTS",
		"OUTPOST_FAUCET_IP_LIMIT=-1":                 "OUTPOST_FAUCET_IP_LIMIT",
		"OUTPOST_FAUCET_COOLDOWN=0s":                 "OUTPOST_FAUCET_COOLDOWN",
		"OUTPOST_FAUCET_QUOTE_TTL=1s":                "OUTPOST_FAUCET_QUOTE_TTL",
		"OUTPOST_FAUCET_MOUNT=/banlist":              "OUTPOST_FAUCET_MOUNT",
		"OUTPOST_FAUCET_DAILY_BUDGET=5":              "OUTPOST_FAUCET_DAILY_BUDGET",
		"OUTPOST_FAUCET_ENABLED=maybe":               "OUTPOST_FAUCET_ENABLED",
		"OUTPOST_FAUCET_MOUNT=/mintdir":              "OUTPOST_FAUCET_MOUNT",
	} {
		k, v, _ := strings.Cut(env, "=")
		err := run(context.Background(), nil, testEnv(dir, map[string]string{k: v}), nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", env, err, want)
		}
	}
	// An amount of weight 0 is never drawn: the smallest claim is 100 sats,
	// which a budget of 50 cannot pay.
	err := run(context.Background(), nil, testEnv(dir, map[string]string{"OUTPOST_FAUCET_AMOUNTS": "1:0,100:1", "OUTPOST_FAUCET_DAILY_BUDGET": "50"}),
		nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "OUTPOST_FAUCET_DAILY_BUDGET") {
		t.Errorf("a budget below the smallest drawable claim: %v", err)
	}
}

func TestNIP98Command(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"nip98", "keygen"}, func(string) string { return "" }, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var nsec string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if v, ok := strings.CutPrefix(line, "OUTPOST_NSEC="); ok {
			nsec = v
		}
	}
	if !strings.HasPrefix(nsec, "nsec1") || !strings.Contains(out.String(), "OUTPOST_NPUB=npub1") {
		t.Fatalf("keygen: %q", out.String())
	}
	out.Reset()
	body := `{"method":"cashu"}`
	url := "http://127.0.0.1:8080/faucet/claim/quote"
	if err := run(context.Background(), []string{"nip98", "sign", "--nsec", nsec, "--body", body, url}, os.Getenv, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	v := nip98.NewVerifier(0, nil, nil)
	pk, err := v.Verify(strings.TrimSpace(out.String()), nip98.Request{Method: "POST", URLs: []string{url}, Body: []byte(body)})
	if err != nil || len(pk) != 64 {
		t.Fatalf("the signed header does not verify: %v", err)
	}
	for _, args := range [][]string{{"nip98"}, {"nip98", "frobnicate"}, {"nip98", "sign", "--nsec", "nsec1bad", url},
		{"nip98", "sign", "--nsec", nsec}, {"nip98", "sign", "--nsec", nsec, "ftp://x"}, {"nip98", "sign", url}} {
		if err := run(context.Background(), args, func(string) string { return "" }, nil, io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
