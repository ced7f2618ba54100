package faucet

import (
	"context"
	"testing"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

// TestCrashRecovery: claims a previous process left in "paying" are settled
// by their recorded intent — paid if the mint paid, failed (and released)
// if it did not — and never paid again.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
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
	// 4. This process's own claim, still being paid by its call.
	mine := orphan("dd", s.run, nil)
	s.paying.take(mine.ID)
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
	taker := minttest.Wallet(t, r.mint.URL)
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

// TestStuckClaimsSettleWhileRunning: claims of this process whose confirm
// call ended without recording how (a write that failed, a panic) are
// settled by the background job while the program runs, by the recorded
// intent a restart goes by; while the mint is away they wait, and a claim
// whose call is still paying it is left to that call. A claim whose melt
// answer the mint's outage lost ends pending, and settles once the mint is
// back. No restart; nothing is paid twice.
func TestStuckClaimsSettleWhileRunning(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{Proxy: true, Poll: 50 * time.Millisecond})
	s, tr, ctx := r.s, r.tr, r.ctx

	// Left behind by calls of this process that could not record how
	// they ended. 1: the mint paid its melt.
	q1, inv1 := r.invoice(40)
	mq1, err := tr.MeltQuote(ctx, inv1)
	if err != nil {
		t.Fatal(err)
	}
	melted := r.claimAs("aa", s.run, &mq1)
	if p, err := tr.Melt(ctx, mq1, 0); err != nil || p.State != treasury.Paid {
		t.Fatalf("melt %+v %v", p, err)
	}
	// 2: its melt quote recorded, never melted.
	q2, inv2 := r.invoice(40)
	mq2, err := tr.MeltQuote(ctx, inv2)
	if err != nil {
		t.Fatal(err)
	}
	unmelted := r.claimAs("bb", s.run, &mq2)
	// 3: a token made and withheld.
	withheld := r.claimAs("cc", s.run, nil)
	if _, err := tr.SendToken(ctx, withheld.ID, 40, 0); err != nil {
		t.Fatal(err)
	}
	// 4: a claim a call of this process is still paying.
	busy := r.claimAs("dd", s.run, nil)
	if !s.paying.take(busy.ID) {
		t.Fatal("a new claim is taken already")
	}

	// 5: confirmed while the mint goes away in the middle of paying it:
	// the mint pays, its answer is lost.
	q5, inv5 := r.invoice(40)
	now := s.now()
	quote, err := s.storeQuote(Quote{ID: newID("q_"), PubKey: "ee", Method: MethodBolt11, AmountSats: 40,
		CreatedAt: now.Unix(), ExpiresAt: now.Add(time.Minute).Unix(), State: QuoteOpen}, now)
	if err != nil {
		t.Fatal(err)
	}
	r.mint.Node.SetOutcome(func(string) lightning.State { r.proxy.Down(); return lightning.Succeeded })
	res, err := s.Confirm(ctx, Session{PubKey: "ee", Method: LoginNIP98}, "203.0.113.10", quote.ID, inv5)
	r.mint.Node.SetOutcome(nil)
	if err != nil || res.Status != ClaimPending {
		t.Fatalf("a claim whose melt answer was lost: %+v %v, want pending", res, err)
	}
	lost := r.claim(res.ClaimID)

	// The mint is away: twenty rounds of the job; what only the mint can
	// tell waits. (The wallet knows the first claim's melt was paid: it
	// may settle.)
	for i := range 20 {
		s.tick(ctx, i == 0) // the first as Run's, a kicked one
	}
	if got := r.claim(melted.ID); got.State == ClaimFailed {
		t.Fatalf("a paid melt's claim failed: %+v", got)
	}
	for _, c := range []Claim{unmelted, withheld, busy} {
		if got := r.claim(c.ID); got.State != ClaimPaying {
			t.Fatalf("claim %s settled while the mint was away: %+v", c.PubKey, got)
		}
	}
	if got := r.claim(lost.ID); got.State != ClaimPending {
		t.Fatalf("the claim whose answer was lost: %+v", got)
	}

	defer func() {
		if t.Failed() {
			for _, c := range []Claim{melted, unmelted, withheld, busy, lost} {
				t.Logf("claim of %s: %s", c.PubKey, r.claim(c.ID).State)
			}
		}
	}()

	// The mint is back: every claim no call is paying settles, by itself.
	jobCtx, stop := context.WithCancel(ctx)
	jobDone := make(chan struct{})
	go func() { s.Run(jobCtx); close(jobDone) }()
	t.Cleanup(func() { stop(); <-jobDone })
	r.proxy.Up(t)
	testkit.WaitFor(t, 30*time.Second, "the stuck claims to settle", func() bool {
		for _, c := range []Claim{melted, unmelted, withheld, lost} {
			if st := r.claim(c.ID).State; st != ClaimPaid && st != ClaimFailed {
				return false
			}
		}
		return true
	})
	if c := r.claim(melted.ID); c.State != ClaimPaid || !r.hasCooldown("aa") {
		t.Errorf("melted: %+v, want paid", c)
	}
	if c := r.claim(unmelted.ID); c.State != ClaimFailed || r.hasCooldown("bb") {
		t.Errorf("never melted: %+v, want failed, its cooldown released", c)
	}
	if c := r.claim(withheld.ID); c.State != ClaimFailed || r.hasCooldown("cc") {
		t.Errorf("token withheld: %+v, want failed, its cooldown released", c)
	}
	if c := r.claim(lost.ID); c.State != ClaimPaid || !r.hasCooldown("ee") {
		t.Errorf("the answer lost: %+v, want paid", c)
	}
	if c := r.claim(busy.ID); c.State != ClaimPaying {
		t.Errorf("a claim a call is paying was touched: %+v", c)
	}
	// Paid once each: the user mints what the two paid invoices bought;
	// the unpaid one was never paid.
	for _, q := range []string{q1, q5} {
		if n, err := r.user.MintTokens(q); err != nil || n != 40 {
			t.Errorf("a paid invoice: minted %d, %v", n, err)
		}
	}
	if _, err := r.user.MintTokens(q2); err == nil {
		t.Error("the invoice of a claim marked failed was paid")
	}
	// The token nobody got is back: the wallet holds the 500 sats funded
	// less what the two paid claims cost, and the mint agrees.
	st, _ := s.Stats(ctx)
	if st.TotalClaims != 2 || st.TotalPaidSats != 80 {
		t.Errorf("stats %+v, want the two paid claims", st)
	}
	if got := r.balance(); got != 500-80-st.TotalFeeSats {
		t.Errorf("balance %d, want 500 - 80 paid - %d fees", got, st.TotalFeeSats)
	}
	if a, err := tr.Audit(ctx); err != nil || a.UnspentSats != a.HeldSats || int64(a.HeldSats) != r.balance() {
		t.Errorf("audit %+v %v, balance %d", a, err, r.balance())
	}

	// The busy call ends without recording anything either: its claim is
	// settled next, as a token payout that made nothing.
	s.paying.drop(busy.ID)
	testkit.WaitFor(t, 30*time.Second, "the last claim to settle", func() bool { return r.claim(busy.ID).State == ClaimFailed })
	if r.hasCooldown("dd") {
		t.Error("the last claim's cooldown was kept")
	}
}
