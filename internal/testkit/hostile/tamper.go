package hostile

import (
	"encoding/hex"
	"encoding/json"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// signatureArrays are the members of an answer that hold blind signatures:
// swap, mint and restore answer "signatures", melt "change", and older
// restore answers "promises".
var signatureArrays = []string{"signatures", "change", "promises"}

// tamperer applies a signature fault to the signatures of one answer.
type tamperer struct {
	Rule
	keysets func() []string // the mint's keyset ids, asked for only by WrongKeyset
	ids     []string
	asked   bool
}

// tamper returns body with the fault applied, and whether any signature was
// selected. Other members of the answer are kept as they were (though not
// their order).
func (t *tamperer) tamper(body []byte) ([]byte, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body, false
	}
	changed := false
	for _, key := range signatureArrays {
		var sigs []map[string]json.RawMessage
		if raw, ok := top[key]; !ok || json.Unmarshal(raw, &sigs) != nil {
			continue
		}
		sel := selected(t.Indices, len(sigs))
		if len(sel) == 0 {
			continue
		}
		for _, i := range sel {
			t.apply(sigs[i])
		}
		if t.Fault == DropSigs {
			sigs = without(sigs, sel)
		}
		b, err := json.Marshal(sigs)
		if err != nil {
			return body, false
		}
		top[key], changed = b, true
	}
	if !changed {
		return body, false
	}
	out, err := json.Marshal(top)
	if err != nil {
		return body, false
	}
	return out, true
}

// selected resolves Rule.Indices against an array of n signatures: nil is
// all of them, negative indices count from the end, and indices out of
// range are ignored (so one rule can serve answers of any length).
func selected(indices []int, n int) []int {
	if indices == nil {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	seen := map[int]bool{}
	for _, i := range indices {
		if i < 0 {
			i += n
		}
		if i >= 0 && i < n && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

func (t *tamperer) apply(sig map[string]json.RawMessage) {
	if sig == nil {
		return
	}
	switch t.Fault {
	case DropDLEQ:
		delete(sig, "dleq")
	case CorruptSig:
		sig["C_"] = jsonString(otherPoint(stringOf(sig["C_"])))
	case CorruptSigNoDLEQ:
		sig["C_"] = jsonString(otherPoint(stringOf(sig["C_"])))
		delete(sig, "dleq")
	case WrongKeyset:
		sig["id"] = jsonString(t.otherID(stringOf(sig["id"])))
	}
}

// otherPoint is C_ + G: a valid point of the curve, compressed like C_, that
// no wallet can tell from a signature until it unblinds it or checks its
// DLEQ. If C_ is no point at all, it is G.
func otherPoint(c string) string {
	var g, sum secp256k1.JacobianPoint
	var one secp256k1.ModNScalar
	one.SetInt(1)
	secp256k1.ScalarBaseMultNonConst(&one, &g)
	sum = g
	if b, err := hex.DecodeString(c); err == nil {
		if pk, err := secp256k1.ParsePubKey(b); err == nil {
			var pt secp256k1.JacobianPoint
			pk.AsJacobian(&pt)
			secp256k1.AddNonConst(&pt, &g, &sum)
		}
	}
	sum.ToAffine()
	return hex.EncodeToString(secp256k1.NewPublicKey(&sum.X, &sum.Y).SerializeCompressed())
}

// otherID is Rule.KeysetID, or another keyset of the mint's, or id with its
// last hex digit changed: an id of the same form that the mint never had.
func (t *tamperer) otherID(id string) string {
	if t.KeysetID != "" {
		return t.KeysetID
	}
	if !t.asked {
		t.ids, t.asked = t.keysets(), true
	}
	for _, other := range t.ids {
		if other != id {
			return other
		}
	}
	if id == "" {
		return "00ffffffffffffff"
	}
	last := byte('0')
	if id[len(id)-1] == '0' {
		last = '1'
	}
	return id[:len(id)-1] + string(last)
}

func stringOf(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// withState is body with its "state" member set to state (and "paid", of
// older melt answers, to whether it is PAID); an answer without a state
// is left as it is.
func withState(body []byte, state string) ([]byte, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || top["state"] == nil {
		return body, false
	}
	top["state"] = jsonString(state)
	if _, ok := top["paid"]; ok {
		top["paid"], _ = json.Marshal(state == "PAID")
	}
	out, err := json.Marshal(top)
	if err != nil {
		return body, false
	}
	return out, true
}

// without is sigs less those at the indices sel.
func without(sigs []map[string]json.RawMessage, sel []int) []map[string]json.RawMessage {
	drop := map[int]bool{}
	for _, i := range sel {
		drop[i] = true
	}
	out := []map[string]json.RawMessage{}
	for i, s := range sigs {
		if !drop[i] {
			out = append(out, s)
		}
	}
	return out
}
