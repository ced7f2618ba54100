package ecash

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
)

// Ecash locked to a public key (NUT-10/NUT-11 P2PK): only the holder of
// the key's secret can spend it, so it can be handed out in public, as a
// nutzap (NIP-61) is.

// lockedSecret is the NUT-10 secret of an output locked to key. The nonce
// is the output's deterministic secret (NUT-13), so the locked secret, and
// with it the output, can be derived again for a restore (NUT-09).
func lockedSecret(nonce, key string) string {
	b, _ := json.Marshal([]any{"P2PK", map[string]string{"nonce": nonce, "data": key}})
	return string(b)
}

// ErrLockKey is the error of a P2PK key that is not a compressed public key.
var ErrLockKey = errors.New("ecash: not a compressed secp256k1 public key (66 hex characters, 02 or 03 first)")

// LockKey checks a P2PK key and returns its one spelling (lower-case hex of
// the 33-byte compressed point).
func LockKey(key string) (string, error) {
	b, err := hex.DecodeString(key)
	if err != nil || len(b) != 33 || (b[0] != 2 && b[0] != 3) {
		return "", ErrLockKey
	}
	if _, err := secp256k1.ParsePubKey(b); err != nil {
		return "", ErrLockKey
	}
	return hex.EncodeToString(b), nil
}

// SendLocked is Send with the proofs handed out locked to key (NUT-11),
// made by one swap of the wallet's proofs: none of the wallet's own proofs
// is ever part of what is handed out. A send whose answer was lost is
// settled as made once the mint restores its outputs (they can only be the
// receiver's); Locked finds its proofs by ref.
func (w *Wallet) SendLocked(ctx context.Context, ref string, amount, keep uint64, key string) (Sent, error) {
	k, err := LockKey(key)
	if err != nil {
		return Sent{}, err
	}
	if !w.SupportsLocks() {
		return Sent{}, incompatible(w.mint, "/v1/info", "the mint does not support P2PK-locked ecash (NUT-10, NUT-11)")
	}
	return w.sendAll(ctx, ref, amount, keep, k)
}

// SupportsLocks reports whether the mint's info (NUT-06), as last loaded,
// says it supports P2PK-locked ecash (NUT-10 and NUT-11).
func (w *Wallet) SupportsLocks() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.info.supports(10) && w.info.supports(11)
}

// LockedSend is what became of a SendLocked filed under a ref.
type LockedSend struct {
	Made   bool         // the locked proofs exist: the payout happened
	Proofs cashu.Proofs // the receiver's proofs (those not redeemed yet)
	Amount uint64       // the proofs' face value: what the receiver gets plus its input fee
	Fee    uint64       // what it cost: its fees when made, else the fees of an attempt
}

// Locked settles the SendLocked filed under ref if it was left open (a
// crash, a lost answer) and reports it. An error means the mint must be
// asked again later.
func (w *Wallet) Locked(ctx context.Context, ref string) (LockedSend, error) {
	op, found, err := w.opByRef(ref)
	if err != nil || !found {
		return LockedSend{}, err
	}
	if op.Purpose != forLock {
		return LockedSend{}, fmt.Errorf("ecash: operation %s is not a locked send", op.ID)
	}
	if op.State == OpPending {
		if !w.claim(&op) {
			return LockedSend{}, errors.New("ecash: the locked send is still being made")
		}
		err := w.settle(ctx, &op)
		w.release(&op)
		if op.State == OpPending {
			return LockedSend{}, err
		}
	}
	if op.State != OpDone || op.SentAmount == 0 {
		return LockedSend{Fee: op.cost()}, nil
	}
	// Made: its fee is what Send reported, the receiver's input fee included.
	return LockedSend{Made: true, Proofs: op.Sent, Amount: op.SentAmount, Fee: op.Fee}, nil
}
