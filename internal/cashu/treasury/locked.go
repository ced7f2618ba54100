package treasury

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/elnosh/gonuts/cashu"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
)

// Locked is a payout as ecash locked to the receiver's key (NUT-11): the
// proofs of a nutzap (NIP-61).
type Locked struct {
	Made bool // the proofs exist: the payout happened
	// Proofs are each proof as JSON, with its DLEQ proof (NUT-12), as a
	// nutzap's proof tag holds it.
	Proofs  []string
	Amount  int64 // the proofs' face value: what the receiver gets plus its input fee
	FeeSats int64 // what the faucet paid on top (input fees, its own and the receiver's)
}

// SupportsLocks reports whether the mint, as last seen, supports
// P2PK-locked ecash (NUT-10 and NUT-11 in its NUT-06 info).
func (t *Treasury) SupportsLocks() bool { return t.w.SupportsLocks() }

// SendLocked takes amountSats (plus the receiver's input fee) out of the
// wallet as proofs locked to key, made by a swap, unless that leaves less
// than keepSats. ref (the claim id) files it for LockedBy. On an error,
// FeeSats is what a failed attempt cost.
func (t *Treasury) SendLocked(ctx context.Context, ref string, amountSats, keepSats int64, key string) (Locked, error) {
	s, err := t.w.SendLocked(ctx, ref, uint64(amountSats), uint64(max(keepSats, 0)), key)
	if errors.Is(err, ecash.ErrLockKey) {
		return Locked{}, outpost.Errorf(outpost.Unprocessable, "invalid_p2pk_key", "%v", err)
	}
	if err != nil {
		t.log.Warn("faucet wallet: locked send failed", "amount_sats", amountSats, "cost_sats", s.Fee, "err", err)
		return Locked{FeeSats: int64(s.Fee)}, t.failure(err, paymentFailed)
	}
	t.note(nil)
	return Locked{Made: true, Proofs: proofJSON(s.Proofs), Amount: int64(s.Proofs.Amount()), FeeSats: int64(s.Fee)}, nil
}

// LockedBy settles the locked send filed under ref (a claim id) if a crash
// or a lost answer left it open, and says what became of it. An error
// means the mint must be asked again later.
func (t *Treasury) LockedBy(ctx context.Context, ref string) (Locked, error) {
	l, err := t.w.Locked(ctx, ref)
	if err != nil {
		return Locked{}, t.failure(err, paymentFailed)
	}
	return Locked{Made: l.Made, Proofs: proofJSON(l.Proofs), Amount: int64(l.Amount), FeeSats: int64(l.Fee)}, nil
}

func proofJSON(ps cashu.Proofs) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		b, _ := json.Marshal(p) // of plain strings and numbers: cannot fail
		out[i] = string(b)
	}
	return out
}
