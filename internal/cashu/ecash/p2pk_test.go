package ecash_test

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/elnosh/gonuts/cashu/nuts/nut11"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
)

// TestSendLocked: proofs locked to a key (NUT-11) are made by one swap,
// carry their DLEQ proofs, name the key in their secret, and are spent at
// the mint only with a signature of the key's owner; a retry of the ref
// finds them again, and the books balance.
func TestSendLocked(t *testing.T) {
	t.Parallel()
	for _, m := range mints(t) {
		t.Run(m.name, func(t *testing.T) {
			ctx := ctxT(t)
			faucet, user, thief := open(t, m.url, ""), open(t, m.url, ""), open(t, m.url, "")
			fund(t, m, faucet.w, 500)
			if !faucet.w.SupportsLocks() {
				t.Fatal("the mint supports NUT-10/11; the wallet does not see it")
			}
			sk, err := btcec.NewPrivateKey()
			if err != nil {
				t.Fatal(err)
			}
			key := hex.EncodeToString(sk.PubKey().SerializeCompressed())
			if _, err := faucet.w.SendLocked(ctx, "bad", 5, 0, "02"+key[4:]); err == nil {
				t.Fatal("a key that is not a point was taken")
			}
			before := faucet.w.Balance()
			sent, err := faucet.w.SendLocked(ctx, "claim-1", 21, 0, key)
			if err != nil {
				t.Fatal(err)
			}
			if sent.Amount != 21 || faucet.w.Balance() != before-21-sent.Fee {
				t.Fatalf("sent %+v, balance %d → %d", sent, before, faucet.w.Balance())
			}
			for _, p := range sent.Proofs {
				var secret []json.RawMessage
				var data struct{ Nonce, Data string }
				if json.Unmarshal([]byte(p.Secret), &secret) != nil || len(secret) != 2 || string(secret[0]) != `"P2PK"` ||
					json.Unmarshal(secret[1], &data) != nil || data.Data != key || len(data.Nonce) != 64 {
					t.Fatalf("secret %s", p.Secret)
				}
				if p.DLEQ == nil || p.DLEQ.R == "" {
					t.Fatalf("proof without its DLEQ proof: %+v", p)
				}
			}
			got, err := faucet.w.Locked(ctx, "claim-1")
			if err != nil || !got.Made || got.Amount != sent.Proofs.Amount() || len(got.Proofs) != len(sent.Proofs) {
				t.Fatalf("locked %+v %v", got, err)
			}
			if _, _, err := thief.w.Receive(ctx, "", sent.Proofs); err == nil {
				t.Fatal("locked proofs were spent without a signature")
			}
			signed, err := nut11.AddSignatureToInputs(sent.Proofs, sk)
			if err != nil {
				t.Fatal(err)
			}
			if n, _, err := user.w.Receive(ctx, "", signed); err != nil || n == 0 {
				t.Fatalf("the key's owner received %d: %v", n, err)
			}
			audit(t, faucet.w)
		})
	}
}

func TestLockKey(t *testing.T) {
	t.Parallel()
	sk, _ := btcec.NewPrivateKey()
	good := hex.EncodeToString(sk.PubKey().SerializeCompressed())
	for _, bad := range []string{"", "02", good[2:], "04" + good[2:], good + "00", "zz" + good[2:]} {
		if _, err := ecash.LockKey(bad); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
	if k, err := ecash.LockKey(good); err != nil || k != good {
		t.Fatalf("%q: %q %v", good, k, err)
	}
}
