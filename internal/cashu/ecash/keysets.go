package ecash

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Keyset is one set of a mint's public keys (NUT-01/02), as the wallet keeps it.
type Keyset struct {
	ID          string            `json:"id"`
	Mint        string            `json:"mint"`
	Unit        string            `json:"unit"`
	Active      bool              `json:"active"`
	InputFeePpk uint64            `json:"input_fee_ppk"`
	FinalExpiry *int64            `json:"final_expiry,omitempty"`
	Keys        map[uint64]string `json:"keys"` // amount → compressed public key, hex
	SeenAt      int64             `json:"seen_at"`
	Gone        bool              `json:"gone,omitempty"` // the mint no longer lists it

	pub map[uint64]*secp256k1.PublicKey
}

// pubKey is the key that signs amount, or nil.
func (k *Keyset) pubKey(amount uint64) *secp256k1.PublicKey {
	if k.pub == nil {
		k.pub = make(map[uint64]*secp256k1.PublicKey, len(k.Keys))
		for a, h := range k.Keys {
			b, err := hex.DecodeString(h)
			if err != nil {
				continue
			}
			if p, err := secp256k1.ParsePubKey(b); err == nil {
				k.pub[a] = p
			}
		}
	}
	return k.pub[amount]
}

// ShortID is the first 8 bytes of a keyset id (NUT-00 "short keyset id");
// v1 ids are that long already.
func ShortID(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	return id
}

// deriveV1 is the NUT-02 version 00 id: the first 7 bytes of the SHA-256
// of the concatenated compressed keys, in amount order.
func deriveV1(keys map[uint64][]byte) string {
	h := sha256.New()
	for _, a := range sortedAmounts(keys) {
		h.Write(keys[a])
	}
	return "00" + hex.EncodeToString(h.Sum(nil))[:14]
}

// deriveV2 is the NUT-02 version 01 id: the SHA-256 of
// "amount:key,amount:key...|unit:sat[|input_fee_ppk:N][|final_expiry:T]".
func deriveV2(keys map[uint64][]byte, unit string, feePpk uint64, finalExpiry *int64) string {
	var b strings.Builder
	for i, a := range sortedAmounts(keys) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(a, 10))
		b.WriteByte(':')
		b.WriteString(hex.EncodeToString(keys[a]))
	}
	b.WriteString("|unit:" + strings.ToLower(unit))
	if feePpk != 0 {
		b.WriteString("|input_fee_ppk:" + strconv.FormatUint(feePpk, 10))
	}
	if finalExpiry != nil {
		b.WriteString("|final_expiry:" + strconv.FormatInt(*finalExpiry, 10))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "01" + hex.EncodeToString(sum[:])
}

func sortedAmounts[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// verifyKeyset checks that a keyset's id is what its keys (and, for v2, its
// unit, fee and expiry) derive, so the mint cannot sign with keys other
// than those the id names. Only v1 (00) and v2 (01) ids are supported.
func verifyKeyset(k *Keyset) error {
	if len(k.Keys) == 0 {
		return fmt.Errorf("keyset %s has no keys", k.ID)
	}
	raw := make(map[uint64][]byte, len(k.Keys))
	for a, h := range k.Keys {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != 33 {
			return fmt.Errorf("keyset %s: the key for %d is not a compressed public key", k.ID, a)
		}
		if _, err := secp256k1.ParsePubKey(b); err != nil {
			return fmt.Errorf("keyset %s: the key for %d is not on the curve", k.ID, a)
		}
		if a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("keyset %s: amount %d is not a power of two", k.ID, a)
		}
		raw[a] = b
	}
	var want string
	switch {
	case len(k.ID) == 16 && strings.HasPrefix(k.ID, "00"):
		want = deriveV1(raw)
	case len(k.ID) == 66 && strings.HasPrefix(k.ID, "01"):
		want = deriveV2(raw, k.Unit, k.InputFeePpk, k.FinalExpiry)
	default:
		return fmt.Errorf("keyset id %q has a version this wallet does not support (00 and 01 are)", k.ID)
	}
	if want != k.ID {
		return fmt.Errorf("keyset %s: its keys derive the id %s", k.ID, want)
	}
	return nil
}

// fee is the input fee for spending proofs of the given keysets (NUT-02):
// the sum of their input_fee_ppk, rounded up to whole units.
func fee(ppks []uint64) uint64 {
	var sum uint64
	for _, p := range ppks {
		sum += p
	}
	return (sum + 999) / 1000
}

// split decomposes amount into the keyset's denominations, largest first.
// ok is false when the keyset cannot represent it.
func (k *Keyset) split(amount uint64) (out []uint64, ok bool) {
	for _, a := range slices.Backward(sortedAmounts(k.Keys)) {
		for amount >= a {
			out = append(out, a)
			amount -= a
			if len(out) > 1000 {
				return nil, false
			}
		}
	}
	return out, amount == 0
}

// sendSplit is the proofs to hand out so that whoever swaps them nets
// exactly amount after paying this keyset's input fee for them: n proofs
// worth amount+fee(n), for the smallest n that can make that sum. A sum V
// is n powers of two for any n from popcount(V) to V (halving one proof
// adds one), so 21 at 1 sat a proof is 8+8+8, not 16+4+1 (short of the
// fee) or 16+8 (a sat over). fees is the receiver's fee.
func (k *Keyset) sendSplit(amount uint64) (parts []uint64, fees uint64, ok bool) {
	for n := 1; n <= 1000; n++ {
		f := fee(repeat(k.InputFeePpk, n))
		v := amount + f
		if uint64(bits.OnesCount64(v)) > uint64(n) || uint64(n) > v {
			continue
		}
		parts, ok := k.split(v)
		if !ok {
			return nil, 0, false
		}
		if parts, ok = k.halve(parts, n); ok {
			return parts, f, true
		}
	}
	return nil, 0, false
}

// halve splits the largest of parts in two until there are n, or reports
// that the keyset lacks a denomination that takes.
func (k *Keyset) halve(parts []uint64, n int) ([]uint64, bool) {
	for len(parts) < n {
		slices.Sort(parts)
		last := parts[len(parts)-1]
		half := last / 2
		if half == 0 || k.Keys[half] == "" {
			return nil, false
		}
		parts = append(parts[:len(parts)-1], half, half)
	}
	slices.SortFunc(parts, func(a, b uint64) int { return cmp.Compare(b, a) })
	return parts, true
}

func repeat(v uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
