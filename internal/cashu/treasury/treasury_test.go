package treasury_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/elnosh/gonuts/wallet"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
)

var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))

func userWallet(t *testing.T, m *devmint.Mint) *wallet.Wallet { return minttest.Wallet(t, m.URL) }

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	return storetest.Open(t, storetest.Options{Dir: dir, Log: quiet})
}

func newTreasury(t *testing.T, m *devmint.Mint, accepted ...string) *treasury.Treasury {
	t.Helper()
	tr, err := treasury.New(treasury.Config{DB: openStore(t, t.TempDir()).DB, MintURL: m.URL + "/", AcceptedMints: accepted, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close(context.Background()) })
	return tr
}

// fund pays a deposit quote through the fake network and mints it.
func fund(t *testing.T, m *devmint.Mint, tr *treasury.Treasury, sats int64) {
	t.Helper()
	ctx := context.Background()
	q, err := tr.RequestMint(ctx, sats)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := tr.CompleteMint(ctx, q.ID); err != nil || st != treasury.MintUnpaid {
		t.Fatalf("before paying: %s, %v", st, err)
	}
	if err := m.Node.PayInvoice(q.Invoice); err != nil {
		t.Fatal(err)
	}
	for _, want := range []treasury.MintState{treasury.MintIssued, treasury.MintIssued} {
		if st, err := tr.CompleteMint(ctx, q.ID); err != nil || st != want {
			t.Fatalf("after paying: %s, %v", st, err)
		}
	}
}

func code(err error) string {
	if e := outpost.AsError(err); e != nil {
		return e.Code
	}
	return ""
}

func TestPayouts(t *testing.T) {
	t.Parallel()
	m := minttest.Start(t, devmint.Options{})
	tr := newTreasury(t, m)
	ctx := context.Background()
	if b, _ := tr.Balance(); b != 0 {
		t.Fatalf("a new wallet holds %d", b)
	}
	fund(t, m, tr, 1000)
	if b, ok := tr.Balance(); !ok || b != 1000 {
		t.Fatalf("balance %d %v, want 1000", b, ok)
	}
	user := userWallet(t, m)

	t.Run("token", func(t *testing.T) {
		tok, err := tr.SendToken(ctx, "claim-1", 21, 0)
		if err != nil {
			t.Fatal(err)
		}
		ct, err := cashu.DecodeToken(tok.Token)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := user.Receive(ct, false); err != nil || n != 21 {
			t.Fatalf("user received %d, %v", n, err)
		}
		if _, err := tr.SendToken(ctx, "claim-2", 100, 950); err != treasury.ErrInsufficientFunds {
			t.Fatalf("keeping 950 of 979: %v", err)
		}
	})

	t.Run("melt paid", func(t *testing.T) {
		mq, _ := user.RequestMint(30, m.URL)
		q, err := tr.MeltQuote(ctx, mq.Request)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tr.Melt(ctx, q, 0)
		if err != nil || p.State != treasury.Paid || len(p.Preimage) != 64 {
			t.Fatalf("melt: %+v, %v", p, err)
		}
		if n, err := user.MintTokens(mq.Quote); err != nil || n != 30 {
			t.Fatalf("the user minted %d, %v", n, err)
		}
	})

	// Invoices of the same mint are settled inside it, without Lightning;
	// failures and delays need an invoice from elsewhere on the network.
	elsewhere := minttest.Start(t, devmint.Options{})
	outsider := userWallet(t, elsewhere)
	t.Run("melt failed and pending", func(t *testing.T) {
		before, _ := tr.Balance()
		m.Node.SetOutcome(func(string) lightning.State { return lightning.Failed })
		mq, _ := outsider.RequestMint(10, elsewhere.URL)
		q, _ := tr.MeltQuote(ctx, mq.Request)
		p, err := tr.Melt(ctx, q, 0)
		m.Node.SetOutcome(nil)
		if err != nil || p.State != treasury.Failed {
			t.Fatalf("forced failure: %+v, %v", p, err)
		}
		if after, _ := tr.Balance(); after != before {
			t.Fatalf("balance %d after a failed payment, want %d back", after, before)
		}

		m.Node.SetOutcome(func(string) lightning.State { return lightning.Pending })
		mq, _ = outsider.RequestMint(12, elsewhere.URL)
		q, _ = tr.MeltQuote(ctx, mq.Request)
		p, err = tr.Melt(ctx, q, 0)
		m.Node.SetOutcome(nil)
		if err != nil || p.State != treasury.Pending || p.Unsure {
			t.Fatalf("forced pending: %+v, %v", p, err)
		}
		if p, _ := tr.MeltStatus(ctx, q); p.State != treasury.Pending {
			t.Fatalf("status while pending: %+v", p)
		}
		if err := m.Node.ResolvePending(mq.Request, true); err != nil {
			t.Fatal(err)
		}
		if p, err := tr.MeltStatus(ctx, q); err != nil || p.State != treasury.Paid || p.Preimage == "" {
			t.Fatalf("status after it went through: %+v, %v", p, err)
		}
		if n, err := outsider.MintTokens(mq.Quote); err != nil || n != 12 {
			t.Fatalf("the user minted %d, %v", n, err)
		}
	})

	t.Run("concurrent use", func(t *testing.T) {
		before, _ := tr.Balance()
		testkit.Concurrently(t, 8, func(int) error {
			_, err := tr.SendToken(ctx, "", 5, 0)
			return err
		})
		if after, _ := tr.Balance(); after != before-40 {
			t.Fatalf("balance %d, want %d", after, before-40)
		}
	})
}

func TestRedeem(t *testing.T) {
	t.Parallel()
	m, other, stranger := minttest.Start(t, devmint.Options{}), minttest.Start(t, devmint.Options{}), minttest.Start(t, devmint.Options{})
	tr := newTreasury(t, m, other.URL)
	ctx := context.Background()
	fund(t, m, tr, 100) // loads the wallet
	alice := userWallet(t, m)
	if err := minttest.Fund(m, alice, 500); err != nil {
		t.Fatal(err)
	}
	token := func(w *wallet.Wallet, mint string, sats uint64, v3 bool) string {
		t.Helper()
		proofs, err := w.Send(sats, mint, true)
		if err != nil {
			t.Fatal(err)
		}
		var s string
		if v3 {
			tok, _ := cashu.NewTokenV3(proofs, mint+"/", cashu.Sat, false)
			s, _ = tok.Serialize()
		} else {
			tok, _ := cashu.NewTokenV4(proofs, mint, cashu.Sat, false)
			s, _ = tok.Serialize()
		}
		return s
	}

	for _, v3 := range []bool{false, true} {
		s := token(alice, m.URL, 40, v3)
		p, err := treasury.ParseToken(s)
		if err != nil || p.AmountSats != 40 {
			t.Fatalf("parse: %+v, %v", p, err)
		}
		r, err := tr.Redeem(ctx, p, "")
		if err != nil || r.AmountSats != 40 || r.FeeSats != 0 {
			t.Fatalf("redeem (v3 %v): %+v, %v", v3, r, err)
		}
		if _, err := tr.Redeem(ctx, p, ""); code(err) != "token_already_spent" {
			t.Fatalf("replay: %v", err)
		}
	}
	if b, _ := tr.Balance(); b != 180 {
		t.Fatalf("balance %d, want 100+40+40", b)
	}

	// Spent by its owner before it reached us.
	s := token(alice, m.URL, 10, false)
	p, _ := treasury.ParseToken(s)
	ct, _ := cashu.DecodeToken(s)
	if _, err := userWallet(t, m).Receive(ct, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Redeem(ctx, p, ""); code(err) != "token_already_spent" {
		t.Fatalf("spent elsewhere: %v", err)
	}

	// A token whose signature was tampered with.
	s = token(alice, m.URL, 8, true)
	v3, _ := cashu.DecodeTokenV3(s)
	v3.Token[0].Proofs[0].C = "02" + strings.Repeat("11", 32) // not on the curve
	bad, _ := v3.Serialize()
	if _, err := treasury.ParseToken(bad); code(err) != "invalid_token" {
		t.Fatalf("off-curve C: %v", err)
	}
	key, _ := secp256k1.GeneratePrivateKey()
	v3.Token[0].Proofs[0].C = hex.EncodeToString(key.PubKey().SerializeCompressed()) // a point, not the mint's signature
	bad, _ = v3.Serialize()
	p, err := treasury.ParseToken(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Redeem(ctx, p, ""); code(err) != "invalid_token" {
		t.Fatalf("forged signature: %v", err)
	}

	// Another mint: refused unless accepted, swapped over Lightning when it is.
	bob := userWallet(t, stranger)
	if err := minttest.Fund(stranger, bob, 100); err != nil {
		t.Fatal(err)
	}
	p, _ = treasury.ParseToken(token(bob, stranger.URL, 50, false))
	if _, err := tr.Redeem(ctx, p, ""); code(err) != "mint_not_accepted" {
		t.Fatalf("foreign mint: %v", err)
	}
	carol := userWallet(t, other)
	if err := minttest.Fund(other, carol, 300); err != nil {
		t.Fatal(err)
	}
	before, _ := tr.Balance()
	p, _ = treasury.ParseToken(token(carol, other.URL, 200, false))
	r, err := tr.Redeem(ctx, p, "")
	if err != nil || r.AmountSats <= 0 || r.AmountSats+r.FeeSats != 200 || r.MintURL != other.URL {
		t.Fatalf("accepted foreign mint: %+v, %v", r, err)
	}
	if after, _ := tr.Balance(); after != before+r.AmountSats {
		t.Fatalf("balance %d, want %d", after, before+r.AmountSats)
	}
}

func TestParseTokenGarbage(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "c", "cashu", "cashuA", "cashuB", "cashuBo", "cashuA" + base64.URLEncoding.EncodeToString([]byte(`{"token":[]}`)),
		"cashuA" + base64.URLEncoding.EncodeToString([]byte(`{"token":[{"mint":"http://m","proofs":[]}]}`)),
		"cashuA" + base64.URLEncoding.EncodeToString([]byte(`{"token":[{"mint":"ftp://m","proofs":[{"amount":1,"id":"00","secret":"s","C":"02"}]}]}`)),
		"cashuA" + base64.URLEncoding.EncodeToString([]byte(`{"unit":"usd","token":[{"mint":"http://m","proofs":[{"amount":1,"id":"00","secret":"s","C":"02"}]}]}`)),
		"cashuA" + base64.URLEncoding.EncodeToString([]byte(`{"token":[{"mint":"http://m","proofs":[{"amount":1,"id":"00","secret":"s","C":"02"},{"amount":2,"id":"00","secret":"s","C":"02"}]}]}`)),
		"cashuA" + base64.URLEncoding.EncodeToString([]byte(`{"token":[{"mint":"http://a","proofs":[{"amount":1,"id":"00","secret":"s","C":"02"}]},{"mint":"http://b","proofs":[{"amount":1,"id":"00","secret":"t","C":"02"}]}]}`)),
		"cashuA" + base64.URLEncoding.EncodeToString([]byte(`{"token":[{"mint":"http://m","proofs":[{"amount":18446744073709551615,"id":"00","secret":"s","C":"02"}]}]}`)),
		"cashuB" + strings.Repeat("A", 50), "cashuA!!!!", strings.Repeat("cashuA", 10000)} {
		if _, err := treasury.ParseToken(s); code(err) != "invalid_token" {
			t.Errorf("ParseToken(%.40q) = %v, want invalid_token", s, err)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add("cashuAeyJ0b2tlbiI6W119")
	f.Add("cashuBo2F0gaJhaUgA")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := treasury.ParseToken(s)
		if err == nil && (p.AmountSats <= 0 || len(p.Ys) == 0) {
			t.Fatalf("accepted %q as %+v", s, p)
		}
	})
}

func TestMintDown(t *testing.T) {
	t.Parallel()
	m := minttest.Start(t, devmint.Options{})
	url := m.URL
	m.Close()
	tr, err := treasury.New(treasury.Config{DB: openStore(t, t.TempDir()).DB, MintURL: url, Log: quiet, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := tr.SendToken(ctx, "", 1, 0); code(err) != "mint_unavailable" {
		t.Fatalf("with the mint down: %v", err)
	}
	if err := tr.CheckMint(ctx); code(err) != "mint_unavailable" {
		t.Fatalf("CheckMint with the mint down: %v", err)
	}
	if st := tr.Status(); st.State != treasury.StateUnreachable || st.Reason == "" {
		t.Fatalf("status %+v", st)
	}
	if err := tr.Ready(); code(err) != "mint_unavailable" {
		t.Fatalf("ready: %v", err)
	}
}

// A check that fails for a reason of our own (here the database is closed)
// says nothing about the mint, which stays ok, but is logged, not dropped.
func TestCheckMintOwnFailureIsLogged(t *testing.T) {
	t.Parallel()
	m := minttest.Start(t, devmint.Options{})
	st, err := store.Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LogBuffer{}
	tr, err := treasury.New(treasury.Config{DB: st.DB, MintURL: m.URL + "/", Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.CheckMint(ctx); err != nil {
		t.Fatalf("CheckMint: %v", err)
	}
	st.Close()
	if err := tr.CheckMint(ctx); err != nil {
		t.Errorf("CheckMint with the database closed: %v, want the mint's state (ok)", err)
	}
	if s := tr.Status(); s.State != treasury.StateOK {
		t.Errorf("mint status %+v after a failure of our own", s)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "DB Closed") {
		t.Errorf("the failure was not logged:\n%s", logs)
	}
}
