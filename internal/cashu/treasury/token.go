package treasury

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/crypto"
	decodepay "github.com/nbd-wtf/ln-decodepay"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
)

// MaxTokenLen caps a token string; far above any real token of a few proofs.
const MaxTokenLen = 32 << 10

// maxProofs caps the proofs of one token.
const maxProofs = 256

// ParsedToken is a decoded, sanity-checked Cashu token.
type ParsedToken struct {
	proofs     cashu.Proofs
	Mint       string // normalized
	AmountSats int64
	Ys         []string // hash_to_curve(secret) of each proof, hex: what mints index proofs by
}

func invalidToken(format string, args ...any) *outpost.Error {
	return outpost.Errorf(outpost.Invalid, "invalid_token", format, args...)
}

// ParseToken decodes a cashuA (V3) or cashuB (V4) token, whose keyset ids
// may be full or short. Anything that is not a well-formed sat token of one
// mint is a 400 invalid_token.
func ParseToken(s string) (ParsedToken, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "cashu:")
	if len(s) < 10 || !(strings.HasPrefix(s, "cashuA") || strings.HasPrefix(s, "cashuB")) {
		return ParsedToken{}, invalidToken("not a Cashu token (cashuA... or cashuB...)")
	}
	if len(s) > MaxTokenLen {
		return ParsedToken{}, invalidToken("the token is longer than %d characters", MaxTokenLen)
	}
	tok, err := ecash.DecodeToken(s)
	if err != nil {
		if strings.Contains(err.Error(), "several mints") {
			return ParsedToken{}, invalidToken("a token with proofs of several mints is not accepted")
		}
		return ParsedToken{}, invalidToken("the token could not be decoded")
	}
	if tok.Unit != "" && tok.Unit != cashu.Sat.String() {
		return ParsedToken{}, invalidToken("only sat tokens are accepted, this one is in %q", tok.Unit)
	}
	if tok.Mint == "" {
		return ParsedToken{}, invalidToken("the token names no mint")
	}
	mint, err := NormalizeMintURL(tok.Mint)
	if err != nil {
		return ParsedToken{}, invalidToken("the token's mint URL is not valid")
	}
	if len(tok.Proofs) == 0 || len(tok.Proofs) > maxProofs {
		return ParsedToken{}, invalidToken("the token must hold 1 to %d proofs", maxProofs)
	}
	p := ParsedToken{proofs: tok.Proofs, Mint: mint}
	seen := map[string]bool{}
	for _, pr := range tok.Proofs {
		y, err := proofY(pr)
		if err != nil {
			return ParsedToken{}, err
		}
		if uint64(p.AmountSats)+pr.Amount > math.MaxInt64>>1 {
			return ParsedToken{}, invalidToken("the token's amount is out of range")
		}
		p.AmountSats += int64(pr.Amount)
		if seen[y] {
			return ParsedToken{}, invalidToken("the token holds the same proof twice")
		}
		seen[y] = true
		p.Ys = append(p.Ys, y)
	}
	return p, nil
}

// proofY checks a token's proof for form (amount, keyset id, a signature
// that is a curve point) and returns its Y, hex.
func proofY(pr cashu.Proof) (string, error) {
	malformed := invalidToken("the token holds a malformed proof")
	if pr.Amount == 0 || pr.Amount > 1<<40 || pr.Secret == "" || pr.C == "" || !validKeysetID(pr.Id) {
		return "", malformed
	}
	if c, err := hex.DecodeString(pr.C); err != nil || len(c) != 33 {
		return "", malformed
	} else if _, err := secp256k1.ParsePubKey(c); err != nil {
		return "", malformed
	}
	Y, err := crypto.HashToCurve([]byte(pr.Secret))
	if err != nil {
		return "", malformed
	}
	return hex.EncodeToString(Y.SerializeCompressed()), nil
}

// validKeysetID accepts hex keyset ids of 8 bytes (v1, or a short v2 id)
// or 33 bytes (a full v2 id).
func validKeysetID(id string) bool {
	b, err := hex.DecodeString(id)
	return err == nil && (len(b) == 8 || len(b) == 33)
}

// Redeemed is a token swapped into the wallet.
type Redeemed struct {
	AmountSats int64 // what the wallet received
	FeeSats    int64 // what the swap (and, for other mints, the Lightning hop) cost
	MintURL    string
}

var errSpent = outpost.Errorf(outpost.Conflict, "token_already_spent", "this token was already spent")

func refusedToken(detail string) *outpost.Error {
	return invalidToken("the mint does not accept this token's proofs: %s", detail)
}

// Redeem swaps a token into the wallet: at our own mint by a swap (NUT-03)
// filed under ref (ReceiptIn tells what it brought in, also after a lost
// answer or a crash), from another accepted mint by melting it there to a
// mint quote here. The token's mint is checked first, and the states of
// its proofs (NUT-07).
func (t *Treasury) Redeem(ctx context.Context, p ParsedToken, ref string) (Redeemed, error) {
	if !t.accepted[p.Mint] {
		return Redeemed{}, outpost.Errorf(outpost.Unprocessable, "mint_not_accepted",
			"tokens of %s are not accepted here", p.Mint).With("accepted_mints", t.AcceptedMints())
	}
	w := t.w
	if p.Mint != t.mintURL {
		var err error
		if w, err = t.foreignWallet(p.Mint); err != nil {
			return Redeemed{}, err
		}
	}
	states, err := w.States(ctx, p.proofs)
	if err != nil {
		return Redeemed{}, t.tokenError(w, err)
	}
	for _, s := range states {
		if s != ecash.Unspent {
			return Redeemed{}, errSpent
		}
	}
	if w != t.w {
		return t.redeemForeign(ctx, w, p)
	}
	got, fee, err := t.w.Receive(ctx, ref, p.proofs)
	if err != nil {
		t.log.Debug("faucet wallet: receive failed", "err", err)
		return Redeemed{}, t.tokenError(w, err)
	}
	t.note(nil)
	return Redeemed{AmountSats: int64(got), FeeSats: int64(fee), MintURL: p.Mint}, nil
}

// tokenError maps errors of taking a token in.
func (t *Treasury) tokenError(w *ecash.Wallet, err error) error {
	switch {
	case errors.Is(err, ecash.ErrSpent):
		return errSpent
	case errors.Is(err, ecash.ErrUnknownKeyset):
		return invalidToken("the token's keyset is not one of its mint's")
	}
	if w != t.w {
		// Another mint's trouble is not the faucet's mint's.
		if me := ecash.AsMintError(err); me != nil {
			if me.Problem == ecash.Refused {
				return refusedToken(me.Detail)
			}
			return outpost.Errorf(outpost.BadGateway, "mint_error", "the token's mint %s: %s", w.Mint(), me.Problem).With("cause", me.Detail)
		}
		return err
	}
	return t.failure(err, refusedToken)
}

func (t *Treasury) foreignWallet(mint string) (*ecash.Wallet, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.foreign[mint]; ok {
		return w, nil
	}
	w, err := t.open(mint)
	if err != nil {
		return nil, err
	}
	t.foreign[mint] = w
	return w, nil
}

// redeemForeign takes a token of another accepted mint in: swapped into a
// wallet there, then melted to a mint quote of the faucet's mint. What the
// melt cannot use stays at that mint (and is counted as the fee).
func (t *Treasury) redeemForeign(ctx context.Context, fw *ecash.Wallet, p ParsedToken) (Redeemed, error) {
	got, _, err := fw.Receive(ctx, "", p.proofs)
	if err != nil {
		return Redeemed{}, t.tokenError(fw, err)
	}
	have := int64(fw.Balance())
	amount := int64(got)
	var mq MintQuote
	var q ecash.MeltQuote
	for range 4 {
		if amount <= 0 {
			return Redeemed{}, outpost.Errorf(outpost.Unprocessable, "token_too_small", "the token does not cover the fees of moving it to the faucet's mint")
		}
		if mq, err = t.RequestMint(ctx, amount); err != nil {
			return Redeemed{}, err
		}
		if q, err = fw.MeltQuote(ctx, mq.Invoice); err != nil {
			return Redeemed{}, t.tokenError(fw, err)
		}
		// Leave room for the input fee of the melt's inputs: at most 1 sat per 10 proofs at 100 ppk.
		slack := int64(q.FeeReserve) + 2
		if int64(q.Amount)+slack <= have {
			break
		}
		amount = have - slack
	}
	pay, err := fw.Melt(ctx, q, 0)
	if err != nil {
		return Redeemed{}, t.tokenError(fw, err)
	}
	if pay.State != ecash.Paid {
		return Redeemed{}, outpost.Errorf(outpost.BadGateway, "mint_error", "the token's mint did not pay the faucet's mint (%s); the sats stay at %s", strings.ToLower(pay.State), fw.Mint())
	}
	var st MintState
	for range 50 {
		if st, err = t.CompleteMint(ctx, mq.ID); err != nil || st == MintIssued {
			break
		}
		select {
		case <-ctx.Done():
			return Redeemed{}, mintUnavailable()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return Redeemed{}, err
	}
	if st != MintIssued {
		return Redeemed{}, outpost.Errorf(outpost.BadGateway, "mint_error", "the faucet's mint has not issued the deposit yet")
	}
	return Redeemed{AmountSats: amount, FeeSats: max(0, p.AmountSats-amount), MintURL: p.Mint}, nil
}

func paymentHash(bolt11 string) string {
	inv, err := decodepay.Decodepay(bolt11)
	if err != nil {
		return ""
	}
	return inv.PaymentHash
}
