package ecash

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut12"
	"github.com/elnosh/gonuts/cashu/nuts/nut13"
	"github.com/elnosh/gonuts/crypto"
)

// secrets derives the wallet's deterministic secrets and blinding factors
// (NUT-13) from its BIP39 seed: HMAC-SHA256 for v2 keysets, the BIP32 paths
// m/129372'/0'/keyset'/counter'/{0,1} for v1 keysets.
type secrets struct {
	seed   []byte
	master *hdkeychain.ExtendedKey

	mu    sync.Mutex
	paths map[string]*hdkeychain.ExtendedKey // v1 keyset id → m/129372'/0'/keyset'
}

func newSecrets(seed []byte) (*secrets, error) {
	master, err := hdkeychain.NewMaster(seed, &chaincfg.MainNetParams)
	if err != nil {
		return nil, err
	}
	return &secrets{seed: seed, master: master, paths: map[string]*hdkeychain.ExtendedKey{}}, nil
}

// derive returns the secret and blinding factor for counter of keyset id.
func (s *secrets) derive(id string, counter uint32) (string, *secp256k1.PrivateKey, error) {
	switch {
	case strings.HasPrefix(id, "01"):
		return s.deriveV2(id, counter)
	case strings.HasPrefix(id, "00"):
		return s.deriveV1(id, counter)
	}
	return "", nil, fmt.Errorf("no secret derivation for keyset id %q", id)
}

func (s *secrets) deriveV2(id string, counter uint32) (string, *secp256k1.PrivateKey, error) {
	idb, err := hex.DecodeString(id)
	if err != nil {
		return "", nil, err
	}
	msg := append([]byte("Cashu_KDF_HMAC_SHA256"), idb...)
	msg = binary.BigEndian.AppendUint64(msg, uint64(counter))
	mac := func(kind byte) []byte {
		h := hmac.New(sha256.New, s.seed)
		h.Write(msg)
		h.Write([]byte{kind})
		return h.Sum(nil)
	}
	var r secp256k1.ModNScalar
	r.SetByteSlice(mac(1)) // reduces mod n
	if r.IsZero() {
		return "", nil, errors.New("derived a zero blinding factor")
	}
	return hex.EncodeToString(mac(0)), secp256k1.NewPrivateKey(&r), nil
}

func (s *secrets) deriveV1(id string, counter uint32) (string, *secp256k1.PrivateKey, error) {
	s.mu.Lock()
	path, ok := s.paths[id]
	s.mu.Unlock()
	if !ok {
		var err error
		if path, err = nut13.DeriveKeysetPath(s.master, id); err != nil {
			return "", nil, err
		}
		s.mu.Lock()
		s.paths[id] = path
		s.mu.Unlock()
	}
	secret, err := nut13.DeriveSecret(path, counter)
	if err != nil {
		return "", nil, err
	}
	r, err := nut13.DeriveBlindingFactor(path, counter)
	return secret, r, err
}

// Output is one blinded message the wallet reserved: its keyset, its
// counter (from which secret and r are derived again at any time) and its
// amount. Blank outputs (NUT-08) have amount 1 until the mint fills them.
type Output struct {
	Keyset  string `json:"k"`
	Counter uint32 `json:"c"`
	Amount  uint64 `json:"a"`
	Send    bool   `json:"s,omitempty"` // part of a token handed out
	Lock    string `json:"l,omitempty"` // the P2PK key (NUT-11) its secret is locked to
}

type blinded struct {
	Output
	secret string
	r      *secp256k1.PrivateKey
	B_     *secp256k1.PublicKey
}

// blind makes the blinded messages of outs.
func (s *secrets) blind(outs []Output) ([]blinded, cashu.BlindedMessages, error) {
	bs := make([]blinded, len(outs))
	msgs := make(cashu.BlindedMessages, len(outs))
	for i, o := range outs {
		secret, r, err := s.derive(o.Keyset, o.Counter)
		if err != nil {
			return nil, nil, err
		}
		if o.Lock != "" {
			secret = lockedSecret(secret, o.Lock)
		}
		B_, _, err := crypto.BlindMessage(secret, r)
		if err != nil {
			return nil, nil, err
		}
		bs[i] = blinded{Output: o, secret: secret, r: r, B_: B_}
		msgs[i] = cashu.NewBlindedMessage(o.Keyset, o.Amount, B_)
	}
	return bs, msgs, nil
}

// unblind turns the mint's signature on b into a proof, after checking
// that it is for b's keyset, signed with the key of its amount, and that
// its DLEQ proof (NUT-12) holds; with dleq, a signature without one is
// refused. The amount is the signature's: blank outputs learn theirs from
// the mint.
func unblind(b blinded, sig cashu.BlindedSignature, ks *Keyset, dleq bool) (cashu.Proof, error) {
	if sig.Id != b.Keyset || ks == nil || ks.ID != b.Keyset {
		return cashu.Proof{}, fmt.Errorf("a signature is for keyset %q where %q was asked for", sig.Id, b.Keyset)
	}
	K := ks.pubKey(sig.Amount)
	if K == nil {
		return cashu.Proof{}, fmt.Errorf("a signature is for amount %d, which keyset %s has no key for", sig.Amount, ks.ID)
	}
	cb, err := hex.DecodeString(sig.C_)
	if err != nil {
		return cashu.Proof{}, fmt.Errorf("a signature is not hex: %q", sig.C_)
	}
	C_, err := secp256k1.ParsePubKey(cb)
	if err != nil {
		return cashu.Proof{}, fmt.Errorf("a signature is not a curve point")
	}
	if dleq && sig.DLEQ == nil {
		return cashu.Proof{}, fmt.Errorf("a signature has no DLEQ proof, which the mint advertises (NUT-12)")
	}
	p := cashu.Proof{Amount: sig.Amount, Id: sig.Id, Secret: b.secret,
		C: hex.EncodeToString(crypto.UnblindSignature(C_, b.r, K).SerializeCompressed())}
	if sig.DLEQ != nil {
		B := hex.EncodeToString(b.B_.SerializeCompressed())
		if !nut12.VerifyBlindSignatureDLEQ(*sig.DLEQ, K, B, sig.C_) {
			return cashu.Proof{}, fmt.Errorf("the DLEQ proof of a signature does not hold (NUT-12): the mint signed with a key other than the one it publishes for %d", sig.Amount)
		}
		p.DLEQ = &cashu.DLEQProof{E: sig.DLEQ.E, S: sig.DLEQ.S, R: hex.EncodeToString(b.r.Serialize())}
	}
	return p, nil
}

// proofY is hash_to_curve(secret), hex: what mints index proofs by (NUT-07).
func proofY(secret string) (string, error) {
	Y, err := crypto.HashToCurve([]byte(secret))
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(Y.SerializeCompressed()), nil
}
