package faucet

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/wallet"
	"github.com/outpost-relay/outpost/lnurl"
	"github.com/outpost-relay/outpost/profiles"
	"github.com/outpost-relay/outpost/store"
	"github.com/outpost-relay/outpost/testmint"
	"github.com/outpost-relay/outpost/treasury"
)

// TestCrashRecovery: claims a previous process left in "paying" are settled
// by their recorded intent — paid if the mint paid, failed (and released)
// if it did not — and never paid again.
func TestCrashRecovery(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := testmint.Start(testmint.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	other, err := testmint.Start(testmint.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	st, err := store.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr, err := treasury.New(treasury.Config{DB: st.DB, MintURL: m.URL, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	s, err := New(Config{DB: st.DB, Treasury: tr, LNURL: lnurl.New(lnurl.Options{}), Profiles: &profiles.Fetcher{}, Log: log,
		Settings: Settings{Enabled: true, MaxFeeSats: 5, DailyBudgetSats: 1000}, TestMint: &TestMint{Pay: m.Node.PayInvoice}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Fund(ctx, 500); err != nil {
		t.Fatal(err)
	}
	user, err := wallet.LoadWallet(wallet.Config{WalletPath: t.TempDir(), CurrentMintURL: other.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer user.Shutdown()

	// orphan writes a claim as Confirm does, owned by run.
	orphan := func(pk, run string, mq *treasury.MeltQuote) Claim {
		t.Helper()
		now := s.now()
		c := Claim{ID: newID("c_"), QuoteID: newID("q_"), PubKey: pk, Method: MethodBolt11, AmountSats: 40, FeeReserveSats: 5,
			State: ClaimPaying, IPHash: s.ipHash("203.0.113.9"), Day: day(now), Run: run, MeltQuote: mq, CreatedAt: now.Unix(), AttemptedAt: now.Unix()}
		if mq == nil {
			c.Method = MethodCashu
		}
		err := store.Update(s.db, func(txn *badger.Txn) error {
			l, err := s.readLimits(txn, pk, c.IPHash, now)
			if err != nil {
				return err
			}
			if err := s.reserve(txn, l, &c, now); err != nil {
				return err
			}
			if err := s.putClaim(txn, c); err != nil {
				return err
			}
			return txn.Set(key(kindUnsettled, c.ID), []byte(c.ID))
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	claim := func(id string) Claim {
		var c Claim
		s.db.View(func(txn *badger.Txn) (err error) { c, _, err = getClaim(txn, id); return })
		return c
	}
	hasCooldown := func(pk string) bool {
		var cd cooldown
		s.db.View(func(txn *badger.Txn) error { _, err := store.GetJSON(txn, key(kindCooldown, pk), &cd); return err })
		return cd.Until > s.now().Unix()
	}

	// 1. The crashed process melted, and died before recording it.
	q1, _ := user.RequestMint(40, other.URL)
	mq1, err := tr.MeltQuote(ctx, q1.Request)
	if err != nil {
		t.Fatal(err)
	}
	paidBefore := orphan("aa", "crashed", &mq1)
	if p, err := tr.Melt(ctx, mq1, 0); err != nil || p.State != treasury.Paid {
		t.Fatalf("melt %+v %v", p, err)
	}
	// 2. It recorded the melt quote but never melted.
	q2, _ := user.RequestMint(40, other.URL)
	mq2, _ := tr.MeltQuote(ctx, q2.Request)
	neverPaid := orphan("bb", "crashed", &mq2)
	// 3. A token payout cut short: no melt, nothing handed out.
	cut := orphan("cc", "crashed", nil)
	// 4. This process's own claim, still being paid.
	mine := orphan("dd", s.run, nil)
	// 5. A token made, the claim never recorded as paid: the user never got it.
	made := orphan("ee", "crashed", nil)
	if _, err := tr.SendToken(ctx, made.ID, 40, 0); err != nil {
		t.Fatal(err)
	}
	// 6. The same, but the token was redeemed (so it did reach someone).
	redeemed := orphan("ff", "crashed", nil)
	tok, err := tr.SendToken(ctx, redeemed.ID, 40, 0)
	if err != nil {
		t.Fatal(err)
	}
	taker, err := wallet.LoadWallet(wallet.Config{WalletPath: t.TempDir(), CurrentMintURL: m.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer taker.Shutdown()
	ct, _ := cashu.DecodeToken(tok.Token)
	if n, err := taker.Receive(ct, false); err != nil || n != 40 {
		t.Fatalf("redeem: %d %v", n, err)
	}
	balance, _ := tr.Balance()

	s.ReconcileClaims(ctx)

	if c := claim(paidBefore.ID); c.State != ClaimPaid || c.Preimage == "" || !hasCooldown("aa") {
		t.Fatalf("melted before the crash: %+v", c)
	}
	if n, err := user.MintTokens(q1.Quote); err != nil || n != 40 {
		t.Fatalf("the paid invoice: minted %d, %v", n, err)
	}
	if c := claim(neverPaid.ID); c.State != ClaimFailed || hasCooldown("bb") {
		t.Fatalf("never melted: %+v", c)
	}
	if _, err := user.MintTokens(q2.Quote); err == nil {
		t.Fatal("the invoice of a claim marked failed was paid")
	}
	if c := claim(cut.ID); c.State != ClaimFailed || hasCooldown("cc") {
		t.Fatalf("cut short: %+v", c)
	}
	if c := claim(mine.ID); c.State != ClaimPaying || !hasCooldown("dd") {
		t.Fatalf("this process's own claim was touched: %+v", c)
	}
	if c := claim(made.ID); c.State != ClaimFailed || hasCooldown("ee") {
		t.Fatalf("a token never handed out: %+v", c)
	}
	if c := claim(redeemed.ID); c.State != ClaimPaid || !hasCooldown("ff") {
		t.Fatalf("a redeemed token: %+v", c)
	}
	// The token nobody got is back in the wallet; nothing else moved.
	if b, _ := tr.Balance(); b != balance+40 {
		t.Fatalf("balance %d → %d, want the 40 sats of the token taken back", balance, b)
	}
	if a, err := tr.Audit(ctx); err != nil || a.UnspentSats != a.HeldSats {
		t.Fatalf("audit %+v %v", a, err)
	}
	st2, _ := s.Stats(ctx)
	// Reserved: 6×45; released: 3×45; paid: 2×40 (no fee) → 45+80.
	if st2.TotalClaims != 2 || st2.TotalPaidSats != 80 || st2.DailySpentSats != 80+45 {
		t.Fatalf("stats %+v", st2)
	}
	// A second pass changes nothing.
	s.ReconcileClaims(ctx)
	if st3, _ := s.Stats(ctx); st3.TotalClaims != 2 || st3.DailySpentSats != st2.DailySpentSats {
		t.Fatalf("second pass: %+v", st3)
	}
	if b, _ := tr.Balance(); b != balance+40 {
		t.Fatalf("second pass moved money: %d", b)
	}
}
