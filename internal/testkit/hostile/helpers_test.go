package hostile

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut12"
	"github.com/elnosh/gonuts/crypto"
)

// A tiny Cashu wallet in plain HTTP and JSON, so the tests see exactly
// what goes over the wire.

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// call sends in (if not nil) as JSON and returns the status and body.
func call(ctx context.Context, base, method, path string, in any) (int, []byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return 0, nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// must is call that needs a 200 answer, decoded into out.
func must(t testing.TB, ctx context.Context, base, method, path string, in, out any) {
	t.Helper()
	status, b, err := call(ctx, base, method, path, in)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// keyset is a mint's active sat keyset.
type keyset struct {
	id   string
	keys map[uint64]*secp256k1.PublicKey
}

func activeKeyset(t testing.TB, ctx context.Context, base string) keyset {
	t.Helper()
	var ks struct {
		Keysets []struct {
			ID     string `json:"id"`
			Unit   string `json:"unit"`
			Active bool   `json:"active"`
		} `json:"keysets"`
	}
	must(t, ctx, base, http.MethodGet, "/v1/keysets", nil, &ks)
	for _, k := range ks.Keysets {
		if k.Active && k.Unit == "sat" {
			return keysOf(t, ctx, base, k.ID)
		}
	}
	t.Fatalf("no active sat keyset: %+v", ks)
	return keyset{}
}

func keysOf(t testing.TB, ctx context.Context, base, id string) keyset {
	t.Helper()
	var r struct {
		Keysets []struct {
			ID   string            `json:"id"`
			Keys map[string]string `json:"keys"`
		} `json:"keysets"`
	}
	must(t, ctx, base, http.MethodGet, "/v1/keys/"+id, nil, &r)
	k := keyset{id: id, keys: map[uint64]*secp256k1.PublicKey{}}
	for a, hexKey := range r.Keysets[0].Keys {
		n, _ := strconv.ParseUint(a, 10, 64)
		b, _ := hex.DecodeString(hexKey)
		pk, err := secp256k1.ParsePubKey(b)
		if err != nil {
			t.Fatal(err)
		}
		k.keys[n] = pk
	}
	return k
}

// blinded are outputs with what it takes to unblind their signatures.
type blinded struct {
	msgs    cashu.BlindedMessages
	secrets []string
	rs      []*secp256k1.PrivateKey
}

func blind(t testing.TB, id string, amounts ...uint64) blinded {
	t.Helper()
	var b blinded
	for _, a := range amounts {
		raw := make([]byte, 32)
		rand.Read(raw)
		secret := hex.EncodeToString(raw)
		r, err := secp256k1.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		B_, _, err := crypto.BlindMessage(secret, r)
		if err != nil {
			t.Fatal(err)
		}
		b.msgs = append(b.msgs, cashu.NewBlindedMessage(id, a, B_))
		b.secrets = append(b.secrets, secret)
		b.rs = append(b.rs, r)
	}
	return b
}

func (b blinded) unblind(t testing.TB, k keyset, sigs cashu.BlindedSignatures) cashu.Proofs {
	t.Helper()
	if len(sigs) != len(b.msgs) {
		t.Fatalf("%d signatures for %d outputs", len(sigs), len(b.msgs))
	}
	proofs := make(cashu.Proofs, len(sigs))
	for i, s := range sigs {
		C_ := point(t, s.C_)
		C := crypto.UnblindSignature(C_, b.rs[i], k.keys[s.Amount])
		proofs[i] = cashu.Proof{Amount: s.Amount, Id: s.Id, Secret: b.secrets[i], C: hex.EncodeToString(C.SerializeCompressed())}
	}
	return proofs
}

func point(t testing.TB, h string) *secp256k1.PublicKey {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := secp256k1.ParsePubKey(b)
	if err != nil {
		t.Fatalf("%s is not a point: %v", h, err)
	}
	return pk
}

// dleqOK reports whether sig carries a DLEQ that verifies for output i.
func (b blinded) dleqOK(k keyset, i int, sig cashu.BlindedSignature) bool {
	return sig.DLEQ != nil && nut12.VerifyBlindSignatureDLEQ(*sig.DLEQ, k.keys[sig.Amount], b.msgs[i].B_, sig.C_)
}

// states are the NUT-07 states of proofs.
func states(t testing.TB, ctx context.Context, base string, proofs cashu.Proofs) []string {
	t.Helper()
	ys := make([]string, len(proofs))
	for i, p := range proofs {
		Y, err := crypto.HashToCurve([]byte(p.Secret))
		if err != nil {
			t.Fatal(err)
		}
		ys[i] = hex.EncodeToString(Y.SerializeCompressed())
	}
	var r struct {
		States []struct {
			State string `json:"state"`
		} `json:"states"`
	}
	must(t, ctx, base, http.MethodPost, "/v1/checkstate", map[string]any{"Ys": ys}, &r)
	out := make([]string, len(r.States))
	for i, s := range r.States {
		out[i] = s.State
	}
	return out
}

// restore asks base for the signatures it made on b's outputs.
func restore(t testing.TB, ctx context.Context, base string, b blinded) cashu.BlindedSignatures {
	t.Helper()
	var r struct {
		Signatures cashu.BlindedSignatures `json:"signatures"`
	}
	must(t, ctx, base, http.MethodPost, "/v1/restore", map[string]any{"outputs": b.msgs}, &r)
	return r.Signatures
}

// fund mints proofs of amounts at base; pay pays the quote's invoice (nil:
// the mint's fake Lightning pays it by itself).
func fund(t testing.TB, ctx context.Context, base string, k keyset, pay func(bolt11 string) error, amounts ...uint64) cashu.Proofs {
	t.Helper()
	var total uint64
	for _, a := range amounts {
		total += a
	}
	var q struct {
		Quote   string `json:"quote"`
		Request string `json:"request"`
		State   string `json:"state"`
	}
	must(t, ctx, base, http.MethodPost, "/v1/mint/quote/bolt11", map[string]any{"amount": total, "unit": "sat"}, &q)
	if pay != nil {
		if err := pay(q.Request); err != nil {
			t.Fatal(err)
		}
	}
	for q.State != "PAID" {
		select {
		case <-ctx.Done():
			t.Fatalf("quote %s not paid: %v", q.Quote, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		must(t, ctx, base, http.MethodGet, "/v1/mint/quote/bolt11/"+q.Quote, nil, &q)
	}
	out := blind(t, k.id, amounts...)
	var r struct {
		Signatures cashu.BlindedSignatures `json:"signatures"`
	}
	must(t, ctx, base, http.MethodPost, "/v1/mint/bolt11", map[string]any{"quote": q.Quote, "outputs": out.msgs}, &r)
	for i, s := range r.Signatures {
		if !out.dleqOK(k, i, s) {
			t.Fatalf("minted signature %d has no valid DLEQ: %+v", i, s)
		}
	}
	return out.unblind(t, k, r.Signatures)
}

// swap trades in for outputs of amounts (no fees) at base.
func swap(t testing.TB, ctx context.Context, base string, k keyset, in cashu.Proofs, amounts ...uint64) (int, []byte, blinded) {
	t.Helper()
	out := blind(t, k.id, amounts...)
	status, b, err := call(ctx, base, http.MethodPost, "/v1/swap", map[string]any{"inputs": in, "outputs": out.msgs})
	if err != nil {
		t.Fatalf("swap: %v", err)
	}
	return status, b, out
}

func signaturesOf(t testing.TB, body []byte) cashu.BlindedSignatures {
	t.Helper()
	var r struct {
		Signatures cashu.BlindedSignatures `json:"signatures"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	return r.Signatures
}
