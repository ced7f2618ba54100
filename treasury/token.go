package treasury

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/crypto"
	"github.com/elnosh/gonuts/wallet"
	decodepay "github.com/nbd-wtf/ln-decodepay"
	"github.com/outpost-relay/outpost"
)

// MaxTokenLen caps a token string; far above any real token of a few proofs.
const MaxTokenLen = 32 << 10

// maxProofs caps the proofs of one token.
const maxProofs = 256

// ParsedToken is a decoded, sanity-checked Cashu token.
type ParsedToken struct {
	token      cashu.Token
	Mint       string // normalized
	AmountSats int64
	Ys         []string // hash_to_curve(secret) of each proof, hex: what mints index proofs by
}

func invalidToken(format string, args ...any) *outpost.Error {
	return outpost.Errorf(outpost.Invalid, "invalid_token", format, args...)
}

// ParseToken decodes a cashuA (V3) or cashuB (V4) token. Anything that is
// not a well-formed sat token of one mint is a 400 invalid_token; gonuts'
// decoders are only called on input they cannot panic on.
func ParseToken(s string) (p ParsedToken, err error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "cashu:")
	// gonuts slices tokenstr[:6] and panics on anything shorter.
	if len(s) < 10 || !(strings.HasPrefix(s, "cashuA") || strings.HasPrefix(s, "cashuB")) {
		return ParsedToken{}, invalidToken("not a Cashu token (cashuA... or cashuB...)")
	}
	if len(s) > MaxTokenLen {
		return ParsedToken{}, invalidToken("the token is longer than %d characters", MaxTokenLen)
	}
	defer func() {
		if r := recover(); r != nil {
			p, err = ParsedToken{}, invalidToken("the token could not be decoded")
		}
	}()
	var (
		tok   cashu.Token
		mints []string
		unit  string
	)
	if s[5] == 'A' {
		v3, err := cashu.DecodeTokenV3(s)
		if err != nil {
			return ParsedToken{}, invalidToken("the token could not be decoded")
		}
		for _, tp := range v3.Token {
			mints = append(mints, tp.Mint)
		}
		tok, unit = v3, v3.Unit
	} else {
		v4, err := cashu.DecodeTokenV4(s)
		if err != nil {
			return ParsedToken{}, invalidToken("the token could not be decoded")
		}
		tok, unit, mints = v4, v4.Unit, []string{v4.MintURL}
	}
	if unit != "" && unit != cashu.Sat.String() {
		return ParsedToken{}, invalidToken("only sat tokens are accepted, this one is in %q", unit)
	}
	if len(mints) == 0 {
		return ParsedToken{}, invalidToken("the token names no mint")
	}
	mint, err := NormalizeMintURL(mints[0])
	if err != nil {
		return ParsedToken{}, invalidToken("the token's mint URL is not valid")
	}
	for _, m := range mints[1:] {
		if n, err := NormalizeMintURL(m); err != nil || n != mint {
			return ParsedToken{}, invalidToken("a token with proofs of several mints is not accepted")
		}
	}
	proofs := tok.Proofs()
	if len(proofs) == 0 || len(proofs) > maxProofs {
		return ParsedToken{}, invalidToken("the token must hold 1 to %d proofs", maxProofs)
	}
	p = ParsedToken{token: tok, Mint: mint}
	seen := map[string]bool{}
	for _, pr := range proofs {
		if pr.Amount == 0 || pr.Amount > 1<<40 || pr.Secret == "" || pr.C == "" || pr.Id == "" {
			return ParsedToken{}, invalidToken("the token holds a malformed proof")
		}
		if c, err := hex.DecodeString(pr.C); err != nil || len(c) != 33 {
			return ParsedToken{}, invalidToken("the token holds a malformed proof")
		} else if _, err := secp256k1.ParsePubKey(c); err != nil {
			return ParsedToken{}, invalidToken("the token holds a malformed proof")
		}
		if uint64(p.AmountSats)+pr.Amount > math.MaxInt64>>1 {
			return ParsedToken{}, invalidToken("the token's amount is out of range")
		}
		p.AmountSats += int64(pr.Amount)
		Y, err := crypto.HashToCurve([]byte(pr.Secret))
		if err != nil {
			return ParsedToken{}, invalidToken("the token holds a malformed proof")
		}
		y := hex.EncodeToString(Y.SerializeCompressed())
		if seen[y] {
			return ParsedToken{}, invalidToken("the token holds the same proof twice")
		}
		seen[y] = true
		p.Ys = append(p.Ys, y)
	}
	return p, nil
}

// Redeemed is a token swapped into the wallet.
type Redeemed struct {
	AmountSats int64 // what the wallet received
	FeeSats    int64 // what the swap (and, for other mints, the Lightning hop) cost
	MintURL    string
}

var errSpent = outpost.Errorf(outpost.Conflict, "token_already_spent", "this token was already spent")

// Redeem swaps a token into the wallet: at our own mint by a swap (NUT-03),
// from another accepted mint by melting it there to a mint quote here. The
// token's mint is checked first: gonuts' Receive(token, false) would trust
// any mint a token names.
func (t *Treasury) Redeem(ctx context.Context, p ParsedToken) (Redeemed, error) {
	if !t.accepted[p.Mint] {
		return Redeemed{}, outpost.Errorf(outpost.Unprocessable, "mint_not_accepted",
			"tokens of %s are not accepted here", p.Mint).With("accepted_mints", t.AcceptedMints())
	}
	if err := t.checkUnspent(ctx, p); err != nil {
		return Redeemed{}, err
	}
	var out Redeemed
	err := t.use(ctx, func(w *wallet.Wallet) error {
		tok := p.token
		own := p.Mint == t.mintURL
		if own {
			// The wallet knows its mint by one spelling only.
			v4, err := cashu.NewTokenV4(tok.Proofs(), t.mintURL, cashu.Sat, true)
			if err != nil {
				return invalidToken("the token could not be re-encoded")
			}
			tok = v4
		}
		got, err := w.Receive(tok, !own)
		if err != nil {
			t.log.Debug("faucet wallet: receive failed", "err", err)
			return receiveError(err)
		}
		out = Redeemed{AmountSats: int64(got), FeeSats: max(0, p.AmountSats-int64(got)), MintURL: p.Mint}
		return nil
	})
	return out, err
}

// receiveError maps gonuts' Receive errors, which lose their type on the way
// (fmt.Errorf with %v), by the NUT error details the mints send.
func receiveError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, cashu.ProofAlreadyUsedErr.Detail), strings.Contains(msg, cashu.ProofPendingErr.Detail):
		return errSpent
	case strings.Contains(msg, cashu.InvalidProofErr.Detail), strings.Contains(msg, cashu.DuplicateProofs.Detail),
		strings.Contains(msg, cashu.UnknownKeysetErr.Detail), strings.Contains(msg, "invalid DLEQ"),
		strings.Contains(msg, "cannot sign locked proofs"):
		return invalidToken("the mint does not accept this token's proofs")
	}
	return outpost.Errorf(outpost.BadGateway, "mint_error", "the mint could not redeem the token; try again later").With("cause", msg)
}

// checkUnspent asks the token's mint for the state of its proofs (NUT-07).
func (t *Treasury) checkUnspent(ctx context.Context, p ParsedToken) error {
	body, _ := json.Marshal(map[string][]string{"Ys": p.Ys})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Mint+"/v1/checkstate", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.http.Do(req)
	if err != nil {
		return outpost.Errorf(outpost.BadGateway, "mint_error", "the token's mint cannot be reached")
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusBadRequest {
		return invalidToken("the mint does not accept this token's proofs")
	}
	var st struct {
		States []struct {
			Y     string `json:"Y"`
			State string `json:"state"`
		} `json:"states"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &st) != nil || len(st.States) != len(p.Ys) {
		return outpost.Errorf(outpost.BadGateway, "mint_error", "the token's mint gave no usable proof states")
	}
	for _, s := range st.States {
		if s.State == "SPENT" || s.State == "PENDING" {
			return errSpent
		}
	}
	return nil
}

func paymentHash(bolt11 string) string {
	inv, err := decodepay.Decodepay(bolt11)
	if err != nil {
		return ""
	}
	return inv.PaymentHash
}
