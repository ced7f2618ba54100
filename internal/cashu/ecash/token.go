package ecash

import (
	"errors"
	"fmt"
	"strings"

	"github.com/elnosh/gonuts/cashu"
)

// Token is a Cashu token (NUT-00) of one mint.
type Token struct {
	Mint   string       // as the token names it
	Unit   string       // "" when a cashuA token leaves it out
	Proofs cashu.Proofs // keyset ids as the token has them: full, or short (8 bytes)
}

// WithoutDLEQ is proofs without their DLEQ proofs (NUT-12), to hand out.
func WithoutDLEQ(proofs cashu.Proofs) cashu.Proofs { return bare(proofs) }

// ErrBadToken: the string is not a token this wallet can read.
var ErrBadToken = errors.New("ecash: not a readable Cashu token")

// DecodeToken reads a cashuA (V3, JSON) or cashuB (V4, CBOR) token, with or
// without the "cashu:" URI prefix. A cashuA token naming several mints is
// refused.
func DecodeToken(s string) (t Token, err error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "cashu:")
	if len(s) < 7 || !strings.HasPrefix(s, "cashu") {
		return Token{}, ErrBadToken
	}
	defer func() {
		// gonuts' decoders index into what they decode.
		if r := recover(); r != nil {
			t, err = Token{}, ErrBadToken
		}
	}()
	switch s[5] {
	case 'A':
		v3, err := cashu.DecodeTokenV3(s)
		if err != nil {
			return Token{}, fmt.Errorf("%w: %v", ErrBadToken, err)
		}
		if len(v3.Token) == 0 {
			return Token{}, fmt.Errorf("%w: it holds nothing", ErrBadToken)
		}
		t = Token{Mint: v3.Token[0].Mint, Unit: v3.Unit}
		for _, tp := range v3.Token {
			if tp.Mint != t.Mint {
				return Token{}, fmt.Errorf("%w: it holds proofs of several mints", ErrBadToken)
			}
			t.Proofs = append(t.Proofs, tp.Proofs...)
		}
		return t, nil
	case 'B':
		v4, err := cashu.DecodeTokenV4(s)
		if err != nil {
			return Token{}, fmt.Errorf("%w: %v", ErrBadToken, err)
		}
		return Token{Mint: v4.MintURL, Unit: v4.Unit, Proofs: v4.Proofs()}, nil
	}
	return Token{}, ErrBadToken
}

// Encode serialises t as cashuB (V4) with short keyset ids, or as cashuA
// (V3) with full ones. DLEQ proofs (NUT-12) go along, so the receiver can
// check the mint's signatures offline.
func (t Token) Encode(v3 bool) (string, error) {
	proofs := make(cashu.Proofs, len(t.Proofs))
	copy(proofs, t.Proofs)
	if v3 {
		tok, err := cashu.NewTokenV3(proofs, t.Mint, cashu.Sat, true)
		if err != nil {
			return "", err
		}
		return tok.Serialize()
	}
	for i := range proofs {
		proofs[i].Id = ShortID(proofs[i].Id)
		if d := proofs[i].DLEQ; d != nil && d.R == "" {
			proofs[i].DLEQ = nil
		}
	}
	tok, err := cashu.NewTokenV4(proofs, t.Mint, cashu.Sat, true)
	if err != nil {
		return "", err
	}
	return tok.Serialize()
}
