package faucet

import (
	"testing"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/wallet"
	"github.com/outpost-relay/outpost/treasury"
)

// TestCrashRecovery: claims a previous process left in "paying" are settled
// by their recorded intent — paid if the mint paid, failed (and released)
// if it did not — and never paid again.
func TestCrashRecovery(t *testing.T) {
	r := newRig(t, rigOptions{})
	s, tr, ctx, user := r.s, r.tr, r.ctx, r.user
	orphan, claim, hasCooldown := r.claimAs, r.claim, r.hasCooldown

	// 1. The crashed process melted, and died before recording it.
	q1, inv1 := r.invoice(40)
	mq1, err := tr.MeltQuote(ctx, inv1)
	if err != nil {
		t.Fatal(err)
	}
	paidBefore := orphan("aa", "crashed", &mq1)
	if p, err := tr.Melt(ctx, mq1, 0); err != nil || p.State != treasury.Paid {
		t.Fatalf("melt %+v %v", p, err)
	}
	// 2. It recorded the melt quote but never melted.
	q2, inv2 := r.invoice(40)
	mq2, _ := tr.MeltQuote(ctx, inv2)
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
	taker, err := wallet.LoadWallet(wallet.Config{WalletPath: t.TempDir(), CurrentMintURL: r.mint.URL})
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
	if n, err := user.MintTokens(q1); err != nil || n != 40 {
		t.Fatalf("the paid invoice: minted %d, %v", n, err)
	}
	if c := claim(neverPaid.ID); c.State != ClaimFailed || hasCooldown("bb") {
		t.Fatalf("never melted: %+v", c)
	}
	if _, err := user.MintTokens(q2); err == nil {
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
