package hostile

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/elnosh/gonuts/cashu"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"
	"github.com/outpost-relay/outpost/internal/testkit/nutshelltest"
)

// TestNutshell: the proxy passes a real Nutshell mint through, whose
// signatures (mint, swap, restore, melt change) all carry a DLEQ that
// verifies, and DropDLEQ takes it off; then the mint's keyset is rotated
// behind the proxy, and WrongKeyset puts the retired keyset's id on new
// signatures. Skipped where the Nutshell bundle is not installed.
func TestNutshell(t *testing.T) {
	t.Parallel()
	fee0 := []string{"MINT_INPUT_FEE_PPK=0"}
	m := nutshelltest.StartT(t, nutshelltest.Options{Env: fee0})
	ctx := ctxT(t, 4*time.Minute)
	p := New(t, m.URL)
	var info struct {
		Version string                     `json:"version"`
		Nuts    map[string]json.RawMessage `json:"nuts"`
	}
	must(t, ctx, p.URL, http.MethodGet, "/v1/info", nil, &info)
	if string(info.Nuts["12"]) != `{"supported":true}` {
		t.Fatalf("%s nut 12: %s", info.Version, info.Nuts["12"])
	}
	k := activeKeyset(t, ctx, p.URL)
	proofs := fund(t, ctx, p.URL, k, nil, 8, 8, 8, 8) // checks the DLEQs of minting

	status, b, out := swap(t, ctx, p.URL, k, proofs[:1], 4, 2, 1, 1)
	sigs := signaturesOf(t, b)
	for i := range sigs {
		if status != 200 || !out.dleqOK(k, i, sigs[i]) {
			t.Fatalf("swap %d: %+v", i, sigs[i])
		}
	}

	p.Add(Rule{Route: "/v1/swap", Fault: DropDLEQ, Times: 1})
	status, b, out = swap(t, ctx, p.URL, k, proofs[1:2], 4, 2, 1, 1)
	sigs, real := signaturesOf(t, b), restore(t, ctx, p.URL, out)
	for i := range sigs {
		if status != 200 || sigs[i].DLEQ != nil || sigs[i].C_ != real[i].C_ || !out.dleqOK(k, i, real[i]) {
			t.Fatalf("DropDLEQ %d: %+v, restored %+v", i, sigs[i], real[i])
		}
	}
	if p.Applied("/v1/swap") != 1 || p.Count("/v1/*") < 6 {
		t.Fatalf("applied %d, count %d", p.Applied("/v1/swap"), p.Count("/v1/*"))
	}

	meltChange(t, p, k, proofs[2:3])

	url := m.URL
	m = RestartNutshell(t, m, Rotation{Path: "m/0'/0'/1'", Retire: []string{k.id}, Env: fee0}, p)
	k2 := activeKeyset(t, ctx, p.URL)
	var ks struct {
		Keysets []struct {
			ID     string `json:"id"`
			Active bool   `json:"active"`
		} `json:"keysets"`
	}
	must(t, ctx, p.URL, http.MethodGet, "/v1/keysets", nil, &ks)
	if m.URL != url || k2.id == k.id || len(ks.Keysets) != 2 {
		t.Fatalf("after the rotation: %s (was %s), keysets %+v", m.URL, url, ks)
	}
	// The retired keyset's proofs are still good as inputs; the auto
	// WrongKeyset picks the other keyset the mint lists: the retired one.
	p.Add(Rule{Route: "/v1/swap", Fault: WrongKeyset, Times: 1})
	status, b, _ = swap(t, ctx, p.URL, k2, proofs[3:4], 4, 2, 1, 1)
	for _, s := range signaturesOf(t, b) {
		if status != 200 || s.Id != k.id {
			t.Fatalf("WrongKeyset: %s, old %s, new %s", s.Id, k.id, k2.id)
		}
	}
}

// meltChange melts in for an invoice of 5 sat that the FakeWallet "pays":
// the fee reserve comes back as change, with DLEQs.
func meltChange(t *testing.T, p *Proxy, k keyset, in cashu.Proofs) {
	ctx := ctxT(t, time.Minute)
	bolt11 := fakeInvoice(t, 5)
	var q struct {
		Quote      string `json:"quote"`
		FeeReserve uint64 `json:"fee_reserve"`
	}
	must(t, ctx, p.URL, http.MethodPost, "/v1/melt/quote/bolt11", map[string]any{"request": bolt11, "unit": "sat"}, &q)
	blank := blind(t, k.id, 1, 1, 1)
	var r struct {
		State  string                  `json:"state"`
		Change cashu.BlindedSignatures `json:"change"`
	}
	must(t, ctx, p.URL, http.MethodPost, "/v1/melt/bolt11", map[string]any{"quote": q.Quote, "inputs": in, "outputs": blank.msgs}, &r)
	if r.State != "PAID" || len(r.Change) == 0 {
		t.Fatalf("melt: %+v (fee reserve %d)", r, q.FeeReserve)
	}
	for i, s := range r.Change {
		if !blank.dleqOK(k, i, s) {
			t.Fatalf("change %d: %+v", i, s)
		}
	}
}

// fakeInvoice is a signet invoice nobody can pay, with the payment secret
// Nutshell demands (gonuts' fake invoices have none); FakeWallet "pays" it.
func fakeInvoice(t *testing.T, sats uint64) string {
	var preimage, secret [32]byte
	rand.Read(preimage[:])
	rand.Read(secret[:])
	inv, err := zpay32.NewInvoice(&chaincfg.SigNetParams, sha256.Sum256(preimage[:]), time.Now(),
		zpay32.Amount(lnwire.MilliSatoshi(sats*1000)), zpay32.Description("hostile"), zpay32.PaymentAddr(secret))
	if err != nil {
		t.Fatal(err)
	}
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := inv.Encode(zpay32.MessageSigner{SignCompact: func(msg []byte) ([]byte, error) {
		return ecdsa.SignCompact(key, msg, true), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
