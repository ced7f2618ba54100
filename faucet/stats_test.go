package faucet

import (
	"testing"

	"github.com/elnosh/gonuts/cashu"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

// The wallet mints a paid deposit, then the faucet books it, in two
// transactions: the stats read between them must balance all the same
// (TestWalkthrough/deposits saw the balance 700 sats up with no deposit
// booked once).
func TestStatsBalanceBetweenMintAndBooking(t *testing.T) {
	t.Parallel()
	b := newRig(t, rigOptions{Deposit: 1000})
	info, err := b.s.DepositInfo(b.ctx, 300)
	if err != nil {
		t.Fatal(err)
	}
	var d Deposit
	if err := b.st.DB.View(func(txn *kv.Txn) error { _, err := kv.GetJSON(txn, key(kindDeposit, *info.QuoteID), &d); return err }); err != nil {
		t.Fatal(err)
	}
	if err := b.mint.Node.PayInvoice(*info.Invoice); err != nil {
		t.Fatal(err)
	}
	before := stats(t, b)
	if st, err := b.tr.CompleteMint(b.ctx, d.MintQuoteID); err != nil || st != treasury.MintIssued {
		t.Fatalf("minting the deposit: %v %v", st, err)
	}
	mid := stats(t, b) // minted, not booked: the job has not run
	if *mid.BalanceSats != *before.BalanceSats+300 || mid.TotalDepositedSats != before.TotalDepositedSats+300 || mid.DepositsCount != before.DepositsCount+1 {
		t.Fatalf("between mint and booking: %+v, before %+v", mid, before)
	}
	b.s.completeDeposits(b.ctx, true)
	if after := stats(t, b); after.TotalDepositedSats != mid.TotalDepositedSats || after.DepositsCount != mid.DepositsCount {
		t.Fatalf("booked: %+v, between %+v", after, mid)
	}
}

// stats reads the faucet's stats and checks that its books balance.
func stats(t *testing.T, b *rig) Stats {
	t.Helper()
	st, err := b.s.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := st.TotalDepositedSats + st.MintSurplusSats
	out := *st.BalanceSats + st.TotalPaidSats + st.TotalFeeSats + st.InFlightSats + st.QuarantinedSats + st.LostToMintSats
	if in != out {
		t.Fatalf("the books do not balance: %d in, %d out (%+v)", in, out, st)
	}
	return st
}

// The wallet settles a payout (a melt paid, a token or locked proofs made,
// a token taken back), then the faucet books the claim, in two
// transactions: the stats read between them must balance all the same,
// and count the claim as it will be booked. Each payout is booked as it
// would be: by the confirm's call (settle, recordNutzap) or, from the
// wallet's record, by the background job after a restart.
func TestStatsBalanceBetweenPayoutAndBooking(t *testing.T) {
	t.Parallel()
	b := newRig(t, rigOptions{FeePpk: 1000}) // every payout costs fees
	s, tr, ctx := b.s, b.tr, b.ctx
	// between checks the books while the wallet has settled a payout the
	// faucet has not booked: paid (amount and fee, a claim of the day), or
	// not (only fee, what an attempt cost), against before.
	between := func(what string, before Stats, paid bool, fee int64) Stats {
		t.Helper()
		if fee <= 0 {
			t.Fatalf("%s cost no fee (%d): the fees are not tested", what, fee)
		}
		mid := stats(t, b)
		var amount, claims int64
		if paid {
			amount, claims = 40, 1
		}
		if mid.TotalPaidSats != before.TotalPaidSats+amount || mid.TotalFeeSats != before.TotalFeeSats+fee ||
			mid.TotalClaims != before.TotalClaims+claims || mid.Claims24h != before.Claims24h+claims || mid.Paid24hSats != before.Paid24hSats+amount ||
			mid.PendingClaims != before.PendingClaims {
			t.Fatalf("%s, not booked: %+v, before %+v", what, mid, before)
		}
		return mid
	}
	// booked checks that booking changed none of the figures; a claim
	// that failed gives its reservation in the day's budget back only
	// once it is booked failed.
	booked := func(what string, mid Stats, paid bool) {
		t.Helper()
		after := stats(t, b)
		if after.TotalPaidSats != mid.TotalPaidSats || after.TotalFeeSats != mid.TotalFeeSats || after.TotalClaims != mid.TotalClaims ||
			after.Claims24h != mid.Claims24h || after.Paid24hSats != mid.Paid24hSats || after.PendingClaims != mid.PendingClaims-1 ||
			(paid && after.DailySpentSats != mid.DailySpentSats) || (!paid && after.DailySpentSats != mid.DailySpentSats-45) {
			t.Fatalf("%s, booked: %+v, between %+v", what, after, mid)
		}
	}

	// A melt, booked by the background job from the wallet's record.
	_, inv := b.invoice(40)
	mq, err := tr.MeltQuote(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	c := b.claimAs("aa", "crashed", &mq)
	before := stats(t, b)
	p, err := tr.Melt(ctx, mq, 0)
	if err != nil || p.State != treasury.Paid {
		t.Fatalf("melt: %+v %v", p, err)
	}
	mid := between("melted", before, true, p.FeeSats)
	s.ReconcileClaims(ctx)
	if c := b.claim(c.ID); c.State != ClaimPaid {
		t.Fatalf("melted: %+v", c)
	}
	booked("melted", mid, true)

	// A token, booked by the confirm's call.
	c = b.claimAs("bb", s.run, nil)
	before = stats(t, b)
	tok, err := tr.SendToken(ctx, c.ID, 40, 0)
	if err != nil {
		t.Fatal(err)
	}
	mid = between("token made", before, true, tok.FeeSats)
	c.Token = tok.Token
	if _, err := s.settle(c, ClaimPaid, treasury.Payment{State: treasury.Paid, FeeSats: tok.FeeSats}); err != nil {
		t.Fatal(err)
	}
	booked("token made", mid, true)

	// A token made by a process that stopped before booking it: paid
	// while it is out, then taken back (what the restart's job does
	// first), then the claim failed from the wallet's record.
	c = b.claimAs("cc", "crashed", nil)
	before = stats(t, b)
	if tok, err = tr.SendToken(ctx, c.ID, 40, 0); err != nil {
		t.Fatal(err)
	}
	between("token made before a stop", before, true, tok.FeeSats)
	r, err := tr.Reclaim(ctx, c.ID)
	if err != nil || r.Redeemed {
		t.Fatalf("reclaim: %+v %v", r, err)
	}
	mid = between("token taken back", before, false, r.FeeSats)
	s.ReconcileClaims(ctx)
	if c := b.claim(c.ID); c.State != ClaimFailed {
		t.Fatalf("token taken back: %+v", c)
	}
	booked("token taken back", mid, false)

	// Locked proofs (a nutzap), booked by the confirm's call.
	if !tr.SupportsLocks() {
		t.Fatal("the test mint does not support locked ecash")
	}
	s.cfg.SecretKey = nostr.GeneratePrivateKey()
	c = b.claimAs("dd", s.run, nil)
	c.Method, c.Nutzap = MethodNutzap, &NutzapTarget{Key: "02" + sixtyFour, Mint: b.mint.URL, Relays: []string{"outpost"}}
	if err := s.db.Update(func(txn *kv.Txn) error { return s.putClaim(txn, c) }); err != nil {
		t.Fatal(err)
	}
	before = stats(t, b)
	l, err := tr.SendLocked(ctx, c.ID, 40, 0, c.Nutzap.Key)
	if err != nil {
		t.Fatal(err)
	}
	mid = between("locked proofs made", before, true, l.FeeSats)
	if _, err := s.recordNutzap(c, l); err != nil {
		t.Fatal(err)
	}
	booked("locked proofs made", mid, true)
}

// A token deposit is recorded open, then the wallet takes the token in
// under its id, then the faucet books it. Cut after the wallet's part (a
// lost answer, a kill -9): the stats count it as it will be booked, and
// the deposit job books it from the wallet's record. (The wallet's receive
// and the booking were two transactions with nothing open between them:
// cut there, the sats were the wallet's with no deposit behind them, for
// good.)
func TestTokenDepositBookedFromTheWallet(t *testing.T) {
	t.Parallel()
	b := newRig(t, rigOptions{FeePpk: 1000}) // the receive costs a fee
	alice := minttest.Wallet(t, b.mint.URL)
	if err := minttest.Fund(b.mint, alice, 100); err != nil {
		t.Fatal(err)
	}
	proofs, err := alice.Send(40, b.mint.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cashu.NewTokenV4(proofs, b.mint.URL, cashu.Sat, false)
	if err != nil {
		t.Fatal(err)
	}
	token, _ := tok.Serialize()
	p, err := treasury.ParseToken(token)
	if err != nil {
		t.Fatal(err)
	}
	before := stats(t, b)
	// RedeemEcash up to the wallet's part, as a process killed right after.
	dep, err := b.s.openEcashDeposit(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.tr.Redeem(b.ctx, p, dep.ID)
	if err != nil || r.AmountSats <= 0 || r.FeeSats <= 0 {
		t.Fatalf("redeem: %+v %v", r, err)
	}
	mid := stats(t, b)
	if *mid.BalanceSats != *before.BalanceSats+r.AmountSats || mid.TotalDepositedSats != before.TotalDepositedSats+r.AmountSats ||
		mid.DepositsCount != before.DepositsCount+1 {
		t.Fatalf("between the receive and its booking: %+v, before %+v, redeemed %+v", mid, before, r)
	}
	b.s.completeDeposits(b.ctx, true)
	if n, _ := b.s.openDeposits(); n != 1 {
		t.Fatalf("%d open deposits while the call that opened it runs", n)
	}
	b.s.paying.drop(dep.ID) // the call is gone
	b.s.completeDeposits(b.ctx, true)
	after := stats(t, b)
	var d Deposit
	if err := b.st.DB.View(func(txn *kv.Txn) error { _, err := kv.GetJSON(txn, key(kindDeposit, dep.ID), &d); return err }); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.s.openDeposits(); n != 0 || d.State != DepositCompleted || d.AmountSats != r.AmountSats || d.FeeSats != r.FeeSats ||
		after.TotalDepositedSats != mid.TotalDepositedSats || after.DepositsCount != mid.DepositsCount {
		t.Fatalf("booked by the job: %d open, %+v, stats %+v, between %+v", n, d, after, mid)
	}
	if _, err := b.s.RedeemEcash(b.ctx, token); !testkit.IsKind(err, outpost.Conflict) {
		t.Fatalf("the same token again: %v", err)
	}
}
