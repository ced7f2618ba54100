package faucet

import (
	"testing"
	"time"

	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// The disk fills up while the mint pays a claim: writes are refused from
// then on, but the payment that was made is recorded all the same — the
// wallet's operation and the claim, paid — instead of the claim staying
// "paying" (its reservations held) until the next start.
func TestPaymentMadeAsTheDiskFillsIsRecorded(t *testing.T) {
	t.Parallel()
	disk := testkit.NewFullDisk(t)
	r := newRig(t, rigOptions{DataDir: disk.Dir, Store: kv.Settings{MinFreeSpace: disk.Min}})
	s, st := r.s, r.st
	_, invoice := r.invoice(40)
	inv, err := bolt11.Decode(invoice)
	if err != nil {
		t.Fatal(err)
	}
	now := s.now()
	q, err := s.storeQuote(Quote{ID: newID("q_"), PubKey: "aa", Method: MethodBolt11, AmountSats: 40,
		CreatedAt: now.Unix(), ExpiresAt: now.Add(time.Minute).Unix(), State: QuoteOpen}, now)
	if err != nil {
		t.Fatal(err)
	}
	c := Claim{ID: newID("c_"), QuoteID: q.ID, PubKey: "aa", Method: MethodBolt11, AmountSats: 40, FeeReserveSats: 5, State: ClaimPaying,
		IPHash: s.ipHash("203.0.113.9"), Day: day(now), Run: s.run, CreatedAt: now.Unix()}
	if err := s.takeClaim(&c, now); err != nil {
		t.Fatal(err)
	}

	// The faucet's mint pays; meanwhile the disk fills, and the store notices.
	r.mint.Node.SetOutcome(func(string) lightning.State {
		disk.FillPastMin(t, func() bool { return !st.DB.Writable() })
		return lightning.Succeeded
	})
	res, err := s.melt(r.ctx, c, inv)
	if st.DB.Writable() {
		t.Fatal("the store never refused writes")
	}
	if err != nil || res.Status != ClaimPaid {
		t.Fatalf("a payment made as the disk filled: %+v, %v", res, err)
	}
	var got Claim
	var unsettled bool
	st.DB.View(func(txn *kv.Txn) error {
		got, _, _ = getClaim(txn, c.ID)
		_, err := txn.Get(key(kindUnsettled, c.ID))
		unsettled = err == nil
		return nil
	})
	if got.State != ClaimPaid || unsettled {
		t.Errorf("claim %s, unsettled %v; want paid and settled", got.State, unsettled)
	}
	if bal := r.balance(); bal != 500-40 {
		t.Errorf("balance %d after paying 40 of 500", bal)
	}
	// New work is still refused.
	if _, err := s.storeQuote(Quote{ID: newID("q_"), PubKey: "bb", Method: MethodCashu, AmountSats: 40,
		CreatedAt: now.Unix(), ExpiresAt: now.Add(time.Minute).Unix(), State: QuoteOpen}, now); err != kv.ErrStorageFull {
		t.Errorf("a new quote on a full disk: %v", err)
	}
}
