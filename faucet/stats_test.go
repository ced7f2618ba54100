package faucet

import (
	"testing"

	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// The wallet mints a paid deposit, then the faucet books it, in two
// transactions: the stats read between them must balance all the same
// (TestWalkthrough/deposits saw the balance 700 sats up with no deposit
// booked once).
func TestStatsBalanceBetweenMintAndBooking(t *testing.T) {
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
