package treasury_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut13"
	"github.com/elnosh/gonuts/crypto"
	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/elnosh/gonuts/wallet"
	"github.com/elnosh/gonuts/wallet/storage"
	"github.com/outpost-relay/outpost/testmint"
	"github.com/outpost-relay/outpost/testmint/minttest"
	"github.com/outpost-relay/outpost/treasury"
)

func post(t *testing.T, url string, in, out any) {
	t.Helper()
	b, _ := json.Marshal(in)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		var e map[string]any
		json.NewDecoder(resp.Body).Decode(&e)
		t.Fatalf("%s: %d %v", url, resp.StatusCode, e)
	}
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
}

// signBehindTheWallet mints sats to the gonuts wallet's next outputs without
// telling it: what its v0.4.2 left behind when it died between the mint
// signing and it counting the outputs.
func signBehindTheWallet(t *testing.T, m *testmint.Mint, dir string, sats uint64) {
	t.Helper()
	db, err := storage.InitBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	seed := db.GetSeed()
	var id string
	var counter uint32
	for _, ks := range db.GetKeysets()[m.URL] {
		if ks.Active {
			id, counter = ks.Id, ks.Counter
		}
	}
	db.Close()
	master, _ := hdkeychain.NewMaster(seed, &chaincfg.MainNetParams)
	path, err := nut13.DeriveKeysetPath(master, id)
	if err != nil {
		t.Fatal(err)
	}
	var outs cashu.BlindedMessages
	for i, a := range cashu.AmountSplit(sats) {
		secret, _ := nut13.DeriveSecret(path, counter+uint32(i))
		r, _ := nut13.DeriveBlindingFactor(path, counter+uint32(i))
		B_, _, _ := crypto.BlindMessage(secret, r)
		outs = append(outs, cashu.NewBlindedMessage(id, a, B_))
	}
	var q struct{ Quote, Request string }
	post(t, m.URL+"/v1/mint/quote/bolt11", map[string]any{"amount": sats, "unit": "sat"}, &q)
	if err := m.Node.PayInvoice(q.Request); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st struct{ State string }
		resp, err := http.Get(m.URL + "/v1/mint/quote/bolt11/" + q.Quote)
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		if st.State == "PAID" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	post(t, m.URL+"/v1/mint/bolt11", map[string]any{"quote": q.Quote, "outputs": outs}, nil)
}

// TestMigrateGonutsWallet: a data dir with the gonuts wallet an earlier
// outpost made (<data>/faucet/wallet, at the faucet's mint) is taken over
// on first start: seed, counters, every proof (spendable, in a pending
// melt, handed out in a token), open deposit quotes, and ecash the old
// wallet had signed but never counted. Nothing is lost, nothing is spent
// twice, the old directory is moved aside, and payouts go on.
func TestMigrateGonutsWallet(t *testing.T) {
	m, elsewhere := minttest.Start(t, testmint.Options{}), minttest.Start(t, testmint.Options{})
	ctx := context.Background()
	data := t.TempDir()
	legacy := filepath.Join(data, "faucet", "wallet")
	// As the old treasury made it: the directory, the normalised mint URL.
	old, err := wallet.LoadWallet(wallet.Config{WalletPath: legacy, CurrentMintURL: m.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fund(old, 1000); err != nil {
		t.Fatal(err)
	}
	// A token handed out, not yet redeemed.
	proofs, err := old.Send(100, m.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := cashu.NewTokenV4(proofs, m.URL, cashu.Sat, false)
	handedOut, _ := tok.Serialize()
	// A melt left pending.
	outsider := userWallet(t, elsewhere)
	inv, _ := outsider.RequestMint(50, elsewhere.URL)
	m.Node.SetOutcome(func(string) lightning.State { return lightning.Pending })
	mq, err := old.RequestMeltQuote(inv.Request, m.URL)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := old.Melt(mq.Quote); err != nil || res.State.String() != "PENDING" {
		t.Fatalf("melt %+v %v", res, err)
	}
	m.Node.SetOutcome(nil)
	// An open deposit quote, paid later.
	dq, err := old.RequestMint(77, m.URL)
	if err != nil {
		t.Fatal(err)
	}
	spendable := old.GetBalance()
	if spendable != 1000-100-50 {
		t.Fatalf("the old wallet holds %d", spendable)
	}
	old.Shutdown()
	signBehindTheWallet(t, m, legacy, 64)

	st := openStore(t, filepath.Join(data))
	tr, err := treasury.New(treasury.Config{DB: st.DB, MintURL: m.URL, LegacyDir: legacy, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := tr.Balance(); b != int64(spendable) {
		t.Fatalf("imported balance %d, the old wallet had %d", b, spendable)
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the old wallet is still at %s: %v", legacy, err)
	}
	moved, _ := filepath.Glob(legacy + ".gonuts-*")
	if len(moved) != 1 {
		t.Fatalf("moved aside: %v", moved)
	}
	if _, err := os.Stat(filepath.Join(moved[0], "wallet.db")); err != nil {
		t.Fatalf("the old wallet's database is not kept: %v", err)
	}
	// Once the mint answers: the ecash signed behind the old wallet's back.
	if err := tr.CheckMint(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := tr.Balance(); b != int64(spendable)+64 {
		t.Fatalf("balance %d, want %d + 64 restored", b, spendable)
	}
	// Payouts go on: no output is derived twice.
	for i := range 5 {
		if _, err := tr.SendToken(ctx, "c"+string(rune('a'+i)), 10, 0); err != nil {
			t.Fatalf("payout %d after the migration: %v", i, err)
		}
	}
	// The token handed out before is the user's, never the faucet's.
	ct, _ := cashu.DecodeToken(handedOut)
	if n, err := userWallet(t, m).Receive(ct, false); err != nil || n != 100 {
		t.Fatalf("the user redeemed %d of the old token: %v", n, err)
	}
	// The pending melt settles.
	if p, err := tr.MeltStatus(ctx, treasury.MeltQuote{ID: mq.Quote}); err != nil || p.State != treasury.Pending {
		t.Fatalf("pending melt: %+v %v", p, err)
	}
	if err := m.Node.ResolvePending(inv.Request, true); err != nil {
		t.Fatal(err)
	}
	if p, err := tr.MeltStatus(ctx, treasury.MeltQuote{ID: mq.Quote}); err != nil || p.State != treasury.Paid {
		t.Fatalf("settled melt: %+v %v", p, err)
	}
	if n, err := outsider.MintTokens(inv.Quote); err != nil || n != 50 {
		t.Fatalf("the outsider got %d: %v", n, err)
	}
	// The open deposit quote completes.
	before, _ := tr.Balance()
	if err := m.Node.PayInvoice(dq.Request); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { st, _ := tr.CompleteMint(ctx, dq.Quote); return st == treasury.MintIssued })
	after, _ := tr.Balance()
	if after != before+77 {
		t.Fatalf("deposit: %d → %d", before, after)
	}
	a, err := tr.Audit(ctx)
	if err != nil || a.UnspentSats != uint64(after) || a.HeldSats != uint64(after) {
		t.Fatalf("audit %+v %v (balance %d)", a, err, after)
	}
	// A restart imports nothing again.
	tr.Close(ctx)
	tr2, err := treasury.New(treasury.Config{DB: st.DB, MintURL: m.URL, LegacyDir: legacy, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := tr2.Balance(); b != after {
		t.Fatalf("after a restart %d, want %d", b, after)
	}
	if strings.Contains(moved[0], "wallet.gonuts-") == false {
		t.Fatal(moved)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
