package audit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	decodepay "github.com/nbd-wtf/ln-decodepay"

	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit/hostile"
	"github.com/outpost-relay/outpost/internal/testkit/lnbitstest"
	"github.com/outpost-relay/outpost/internal/testkit/nutshelltest"
)

// payer pays invoices into the network from outside it (a deposit).
type payer interface{ PayInvoice(bolt11 string) error }

// fundAt deposits sats at mint by a quote whose invoice node pays, and
// waits until the audit wallet minted it.
func fundAt(t *testing.T, a *audit.Auditor, mint string, node payer, sats int64) {
	t.Helper()
	ctx := ctxT(t)
	d, err := a.DepositQuote(ctx, mint, sats)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.PayInvoice(d.Invoice); err != nil {
		t.Fatal(err)
	}
	for d.State != audit.DepositDone {
		if d, err = a.Deposit(ctx, d.ID); err != nil && ctx.Err() != nil {
			t.Fatalf("deposit not minted: %v", err)
		}
		if d.State == audit.DepositFailed {
			t.Fatalf("deposit failed: %+v", d)
		}
	}
}

// onNetwork starts a gonuts mint on network.
func onNetwork(t *testing.T, network *devmint.Network, opt devmint.Options) *devmint.Mint {
	t.Helper()
	node, err := network.NewNode("")
	if err != nil {
		t.Fatal(err)
	}
	if opt.Dir == "" {
		opt.Dir = filepath.Join(t.TempDir(), "mint")
	}
	opt.Node = node
	m, err := devmint.Start(opt)
	if err != nil {
		node.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); node.Close() })
	return m
}

// TestNutshellAndGonuts: a Nutshell mint on its LNbits backend (an
// lnbitstest server) and a gonuts mint share one fake Lightning network: a
// melt at Nutshell pays the gonuts mint's quote and the other way round,
// real BOLT11 invoices each side decodes. Rounds both ways end ok, each
// payer showing the invoice's preimage, the fees within the reserve, the
// books balanced.
func TestNutshellAndGonuts(t *testing.T) {
	t.Parallel()
	network := &devmint.Network{}
	lnb := lnbitstest.Start(t, network)
	nut := nutshelltest.StartT(t, nutshelltest.Options{Env: lnb.Env()})
	gm := onNetwork(t, network, devmint.Options{})
	st := openStore(t, t.TempDir())
	defer st.Close()
	a := newAuditor(t, st, nil)
	fundAt(t, a, nut.URL, lnb.Node, 200)
	fundAt(t, a, gm.URL, gm.Node, 200)
	for i, c := range []struct{ payer, payee string }{{nut.URL, gm.URL}, {gm.URL, nut.URL}, {nut.URL, gm.URL}, {gm.URL, nut.URL}} {
		r, err := a.Audit(ctxT(t), c.payer, c.payee, uint64(20+i))
		if err != nil || r.Outcome != audit.OutcomeOK {
			t.Fatalf("round %d %s → %s: %+v %v", i, c.payer, c.payee, r, err)
		}
		if !paidInvoice(r) { // else a payee that failed to mint would not be blamed
			t.Errorf("round %d: the payer's preimage %q is not the invoice's", i, r.Preimage)
		}
		if r.Fee > r.FeeReserve+1 { // the reserve, and Nutshell's input fee of 100 ppk
			t.Errorf("round %d: fee %d over the reserve %d", i, r.Fee, r.FeeReserve)
		}
		balanced(t, a)
	}
	h := balanced(t, a)
	if h.Books.InFlightSats != 0 || h.Books.LostToMintSats != 0 || h.Books.HeldSats+h.Books.FeesPaidSats != 400 {
		t.Fatalf("books after the rounds: %+v", h.Books)
	}
}

// paidInvoice: the payer's preimage of r hashes to its invoice's payment
// hash.
func paidInvoice(r audit.Round) bool {
	inv, err := decodepay.Decodepay(r.Invoice)
	b, _ := hex.DecodeString(r.Preimage)
	h := sha256.Sum256(b)
	return err == nil && len(b) == 32 && hex.EncodeToString(h[:]) == inv.PaymentHash
}

// TestPayerOverchargesFee: a payer that returns less of the fee reserve
// than it owes (Nutshell behind a proxy that drops a change signature of
// the melt, NUT-08) took more than the reserve it quoted: the excess is
// recorded on the round and booked lost to the payer, the payer flagged
// and the round failed on it, the payee's part ok, the books balanced.
func TestPayerOverchargesFee(t *testing.T) {
	t.Parallel()
	network := &devmint.Network{}
	lnb := lnbitstest.Start(t, network)
	nut := nutshelltest.StartT(t, nutshelltest.Options{Env: lnb.Env()})
	px := hostile.New(t, nut.URL)
	gm := onNetwork(t, network, devmint.Options{})
	st := openStore(t, t.TempDir())
	defer st.Close()
	a := newAuditor(t, st, nil)
	fundAt(t, a, px.URL, lnb.Node, 200) // 128+64+8: a melt of 20 overpays, its change comes back
	fundAt(t, a, gm.URL, gm.Node, 100)
	px.Add(hostile.Rule{Route: "/v1/melt/bolt11", Fault: hostile.DropSigs, Indices: []int{1, 2, 3, 4, 5, 6, 7}, Times: 1})
	r, err := a.Audit(ctxT(t), px.URL, gm.URL, 20)
	if err != nil || r.Outcome != audit.OutcomeFailed || r.Fault != audit.RolePayer || r.FeeExcess == 0 {
		t.Fatalf("round: %+v %v", r, err)
	}
	if px.Applied("/v1/melt/bolt11") != 1 {
		t.Fatal("no change signature was dropped")
	}
	h := balanced(t, a)
	if h.Books.LostToMintSats != r.FeeExcess || lostAt(t, a, px.URL) != 0 || held(h, gm.URL) != 120 {
		t.Fatalf("books: %+v, excess %d", h.Books, r.FeeExcess)
	}
	if m := mintHolding(t, a, px.URL); m.Flag == nil || m.Flag.Sats != r.FeeExcess || !m.Withdrawn {
		t.Fatalf("the payer is not flagged: %+v", m)
	}
	es, _, _ := a.Entries(px.URL, 0, 10)
	if len(es) != 1 || es[0].Outcome != audit.OutcomeFailed || es[0].FeeSats <= es[0].FeeReserveSats {
		t.Fatalf("payer entries: %+v", es)
	}
	if es, _, _ := a.Entries(gm.URL, 0, 10); len(es) != 1 || es[0].Outcome != audit.OutcomeOK {
		t.Fatalf("payee entries: %+v", es)
	}
}
