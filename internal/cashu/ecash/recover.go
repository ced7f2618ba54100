package ecash

import (
	"context"
	"errors"
	"fmt"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Recover settles every operation left pending (by a crash, or by a mint
// that did not answer) that no call of this process is working on, and
// frees proofs reserved for operations that never began. It returns how
// many operations are still pending, and the first error.
func (w *Wallet) Recover(ctx context.Context) (int, error) {
	var open []Op
	err := w.db.View(func(txn *kv.Txn) (err error) {
		open, err = w.openOps(txn)
		return err
	})
	if err != nil {
		return 0, err
	}
	var first error
	left := 0
	for i := range open {
		op := &open[i]
		if ctx.Err() != nil {
			return len(open) - i + left, ctx.Err()
		}
		if !w.claim(op) {
			left++
			continue
		}
		err := w.settle(ctx, op)
		w.release(op)
		if op.State == OpPending {
			left++
			if first == nil {
				first = err
			}
		}
	}
	if err := w.freeOrphans(); err != nil && first == nil {
		first = err
	}
	if err := w.reclaimOwed(ctx); err != nil && first == nil {
		first = err
	}
	return left, first
}

// Open is how many operations are not settled yet.
func (w *Wallet) Open() (int, error) {
	var open []Op
	err := w.db.View(func(txn *kv.Txn) (err error) {
		open, err = w.openOps(txn)
		return err
	})
	return len(open), err
}

// settle finds out what became of a pending operation.
func (w *Wallet) settle(ctx context.Context, op *Op) error {
	w.log.Info("ecash: settling an operation left pending", "op", op.ID, "kind", op.Kind, "purpose", op.Purpose)
	switch op.Kind {
	case kindSwap:
		return w.settleSwap(ctx, op, errors.New("interrupted"))
	case kindMint:
		_, err := w.settleMint(ctx, op, true)
		return err
	case kindMelt:
		_, err := w.settleMelt(ctx, op, nil)
		return err
	}
	return fmt.Errorf("ecash: unknown operation kind %q", op.Kind)
}

// freeOrphans makes proofs spendable again whose reserving operation is
// settled or was never written (a split whose melt never began).
func (w *Wallet) freeOrphans() error {
	w.mu.Lock()
	running := make(map[string]bool, len(w.inflight))
	for id := range w.inflight {
		running[id] = true
	}
	w.mu.Unlock()
	freed := 0
	err := w.db.Update(func(txn *kv.Txn) error {
		freed = 0
		var orphans []string
		err := kv.EachJSON(txn, w.key(kindProof), nil, false, func(k []byte, rec proofRecord) (bool, error) {
			if rec.State != proofReserved || running[rec.Op] {
				return true, nil
			}
			op, found, err := w.getOp(txn, rec.Op)
			if err != nil {
				return false, err
			}
			if !found || op.State != OpPending {
				orphans = append(orphans, string(k))
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, k := range orphans {
			var rec proofRecord
			if _, err := kv.GetJSON(txn, []byte(k), &rec); err != nil {
				return err
			}
			rec.State, rec.Op = proofUnspent, ""
			if err := kv.PutJSON(txn, []byte(k), rec); err != nil {
				return err
			}
			freed++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if freed > 0 {
		w.log.Info("ecash: proofs reserved for operations that never ran are spendable again", "proofs", freed)
		return w.refreshBalance()
	}
	return nil
}

// Tidy asks the mint about every proof the wallet holds (NUT-07) and drops
// those it says are spent (the balance then matches the mint), forgets the
// proofs of handed-out tokens once they are redeemed, and swaps proofs of
// inactive keysets into an active one.
func (w *Wallet) Tidy(ctx context.Context) error {
	a, err := w.Audit(ctx)
	if err != nil {
		return err
	}
	if len(a.spent) > 0 {
		w.log.Warn("ecash: the mint says proofs the wallet held are spent; dropping them", "proofs", len(a.spent), "sats", a.HeldSats-a.UnspentSats)
		if err := w.dropSpent(a.spent); err != nil {
			return err
		}
	}
	if err := w.forgetRedeemed(ctx); err != nil {
		return err
	}
	if err := w.retryQuarantined(ctx); err != nil {
		return err
	}
	return w.rotate(ctx)
}

// retryQuarantined offers each quarantined proof to the mint again, alone,
// in a swap to fresh outputs: one the mint now takes is the wallet's again
// (less its fee); one it refuses again stays quarantined; one it says is
// spent is lost. A proof worth no more than its own fee stays where it is.
func (w *Wallet) retryQuarantined(ctx context.Context) error {
	var ys []string
	err := w.db.View(func(txn *kv.Txn) error {
		prefix := len(w.key(kindProof))
		return kv.EachJSON(txn, w.key(kindProof), nil, false, func(k []byte, rec proofRecord) (bool, error) {
			if rec.State == proofQuarantined {
				ys = append(ys, string(k[prefix:]))
			}
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	for _, y := range ys {
		if err := ctx.Err(); err != nil {
			return err
		}
		op := Op{Kind: kindSwap, Purpose: forRetry}
		err := w.begin(&op, func(txn *kv.Txn, op *Op) error {
			var rec proofRecord
			found, err := kv.GetJSON(txn, w.key(kindProof, y), &rec)
			if err != nil || !found || rec.State != proofQuarantined {
				return errNothing
			}
			ks, err := w.activeKeyset()
			old := w.keyset(rec.Proof.Id)
			if err != nil || old == nil {
				return errNothing
			}
			f := fee([]uint64{old.InputFeePpk})
			amounts, ok := ks.split(rec.Proof.Amount - min(f, rec.Proof.Amount))
			if rec.Proof.Amount <= f || !ok {
				return errNothing
			}
			if err := w.reserve(txn, op, []held{{y: y, rec: rec, ks: old}}); err != nil {
				return err
			}
			op.Fee = f
			return w.takeOutputs(txn, op, ks, amounts, false)
		})
		if errors.Is(err, errNothing) {
			continue
		}
		if err != nil {
			return err
		}
		if err := w.swap(ctx, &op); err == nil {
			w.log.Info("ecash: the mint took a quarantined proof after all", "op", op.ID, "sats", op.Received)
		} else if ProblemOf(err) == Unreachable {
			return err
		}
	}
	return nil
}

// Audit is the wallet's proofs as the mint sees them.
type Audit struct {
	HeldProofs    int    // spendable proofs in the store
	HeldSats      uint64 // their sum: the balance
	UnspentProofs int    // of those, the ones the mint says are unspent
	UnspentSats   uint64
	ReservedSats  uint64 // proofs operations are spending (melts in flight)
	// QuarantinedSats are proofs the mint refused; those of them it says
	// are spent (asked along with the rest) are dropped by Tidy as lost.
	QuarantinedSats uint64
	quarantined     []string
	ByKeyset        map[string]uint64 // held sats by keyset id
	spent           []string
}

// Audit asks the mint for the state of every spendable proof (NUT-07).
func (w *Wallet) Audit(ctx context.Context) (Audit, error) {
	a := Audit{ByKeyset: map[string]uint64{}}
	var ys []string
	var amounts []uint64
	err := w.db.View(func(txn *kv.Txn) error {
		prefix := len(w.key(kindProof))
		return kv.EachJSON(txn, w.key(kindProof), nil, false, func(k []byte, rec proofRecord) (bool, error) {
			if rec.State == proofReserved {
				a.ReservedSats += rec.Proof.Amount
				return true, nil
			}
			if rec.State == proofQuarantined {
				a.QuarantinedSats += rec.Proof.Amount
				a.quarantined = append(a.quarantined, string(k[prefix:]))
				return true, nil
			}
			ys = append(ys, string(k[prefix:]))
			amounts = append(amounts, rec.Proof.Amount)
			a.HeldProofs++
			a.HeldSats += rec.Proof.Amount
			a.ByKeyset[rec.Proof.Id] += rec.Proof.Amount
			return true, nil
		})
	})
	if err != nil {
		return a, err
	}
	states, err := w.c.checkState(ctx, append(ys, a.quarantined...))
	if err != nil {
		return a, err
	}
	for i, y := range a.quarantined {
		if states[len(ys)+i] == Spent {
			a.spent = append(a.spent, y)
		}
	}
	states = states[:len(ys)]
	for i, st := range states {
		switch st {
		case Unspent:
			a.UnspentProofs++
			a.UnspentSats += amounts[i]
		case Spent:
			a.spent = append(a.spent, ys[i])
		}
	}
	return a, nil
}

// forgetRedeemed drops the proofs of handed-out tokens the mint says are
// spent: they are their receivers' now.
func (w *Wallet) forgetRedeemed(ctx context.Context) error {
	var ops []Op
	err := w.db.View(func(txn *kv.Txn) error {
		return kv.EachKey(txn, w.key(kindSentOp), func(id []byte) (bool, error) {
			op, found, err := w.getOp(txn, string(id))
			if found && op.State == OpDone && len(op.Sent) > 0 {
				ops = append(ops, op)
			}
			return true, err
		})
	})
	if err != nil {
		return err
	}
	for _, op := range ops {
		ys := make([]string, len(op.Sent))
		for i, p := range op.Sent {
			if ys[i], err = proofY(p.Secret); err != nil {
				return err
			}
		}
		states, err := w.c.checkState(ctx, ys)
		if err != nil {
			return err
		}
		var left cashu.Proofs
		for i, st := range states {
			if st != Spent {
				left = append(left, op.Sent[i])
			}
		}
		if len(left) == len(op.Sent) {
			continue
		}
		if err := w.db.Update(func(txn *kv.Txn) error {
			cur, found, err := w.getOp(txn, op.ID)
			if err != nil || !found || len(cur.Sent) != len(op.Sent) {
				return err
			}
			cur.Sent = left
			return w.putOp(txn, cur)
		}); err != nil {
			return err
		}
	}
	return nil
}

// rotate swaps the wallet's proofs of inactive keysets into the active one
// (NUT-02), so the mint can retire them.
func (w *Wallet) rotate(ctx context.Context) error {
	if err := w.ensureKeysets(ctx); err != nil {
		return err
	}
	ks, err := w.activeKeyset()
	if err != nil {
		return err
	}
	op := Op{Kind: kindSwap, Purpose: forRotate}
	err = w.begin(&op, func(txn *kv.Txn, op *Op) error {
		free, _, err := w.spendable(txn)
		if err != nil {
			return err
		}
		var old []held
		var ppk []uint64
		var sum uint64
		for _, h := range free {
			if !h.ks.Active {
				old = append(old, h)
				ppk = append(ppk, h.ks.InputFeePpk)
				sum += h.rec.Proof.Amount
			}
		}
		if len(old) == 0 || sum <= fee(ppk) {
			return errNothing
		}
		if err := w.reserve(txn, op, old); err != nil {
			return err
		}
		amounts, ok := ks.split(sum - fee(ppk))
		if !ok {
			return fmt.Errorf("ecash: keyset %s cannot represent %d", ks.ID, sum-fee(ppk))
		}
		op.Fee = fee(ppk)
		return w.takeOutputs(txn, op, ks, amounts, false)
	})
	if errors.Is(err, errNothing) {
		return nil
	}
	if err != nil {
		return err
	}
	w.log.Info("ecash: moving proofs of inactive keysets to the active one", "op", op.ID, "sats", op.Inputs.Amount(), "keyset", ks.ID)
	return w.swap(ctx, &op)
}

var errNothing = errors.New("ecash: nothing to do")

// Reclaim takes back the token of the send filed under ref, if it was
// made and nobody redeemed it: for a payout whose receiver never got the
// token. made is false when no token was made (or it was taken back);
// redeemed is true when the mint says it was spent, so someone has it.
// fee is what the payout cost: its fees when redeemed, otherwise the fees
// of making and taking back what never reached anyone.
func (w *Wallet) Reclaim(ctx context.Context, ref string) (made, redeemed bool, fee uint64, err error) {
	op, found, err := w.opByRef(ref)
	if err != nil || !found || op.Purpose != forSend {
		return false, false, 0, err
	}
	if pending, err := w.settleNow(ctx, &op, "ecash: the token is still being made"); pending {
		return true, false, 0, err
	}
	if answered, made, redeemed, fee, err := w.reclaimed(op); answered {
		return made, redeemed, fee, err
	}
	// An earlier attempt whose answer was lost may have been carried out
	// (late): then the token is back, and a new swap of its proofs would
	// find them spent and take that for the receiver's redeeming them.
	back, found, err := w.opByRef("reclaim:" + ref)
	if err != nil {
		return true, false, 0, err
	}
	if found {
		if pending, err := w.settleNow(ctx, &back, "ecash: the token is being taken back"); pending {
			return true, false, 0, err
		}
	}
	if !found || back.State != OpDone {
		back = Op{Kind: kindSwap, Purpose: forReclaim, Ref: "reclaim:" + ref}
		err = w.swapIn(ctx, &back, op.Sent)
		if errors.Is(err, ErrSpent) {
			return true, true, op.Fee, nil
		}
		if err != nil {
			return true, false, 0, err
		}
	}
	if err := w.db.Update(func(txn *kv.Txn) error {
		cur, found, err := w.getOp(txn, op.ID)
		if err != nil || !found {
			return err
		}
		cur.Sent, cur.Reclaimed = nil, back.ID
		return w.putOp(txn, cur)
	}); err != nil {
		return true, false, 0, err
	}
	return false, false, op.Inputs.Amount() - op.Received - op.Lost - back.Received - back.Lost, nil
}

// reclaimed answers Reclaim for a settled send with no token left to take
// back (answered false: it has one).
func (w *Wallet) reclaimed(op Op) (answered, made, redeemed bool, fee uint64, err error) {
	switch {
	case op.State == OpFailed:
		return true, false, false, 0, nil
	case op.SentAmount == 0 && op.Abandoned: // its Send returned before it settled: the wallet booked its cost
		return true, false, false, 0, nil
	case op.SentAmount == 0: // settled after the fact: its outputs are the wallet's
		return true, false, false, op.Inputs.Amount() - op.Received - op.Lost, nil
	case op.Reclaimed != "":
		var back Op
		if err := w.db.View(func(txn *kv.Txn) (err error) { back, _, err = w.getOp(txn, op.Reclaimed); return }); err != nil {
			return true, false, false, 0, err
		}
		return true, false, false, op.Inputs.Amount() - op.Received - op.Lost - back.Received - back.Lost, nil
	case len(op.Sent) == 0: // Tidy saw it redeemed
		return true, true, true, op.Fee, nil
	}
	return false, false, false, 0, nil
}

// settleNow settles op if it is pending and no other call holds it;
// pending says it still is, and err why.
func (w *Wallet) settleNow(ctx context.Context, op *Op, busy string) (pending bool, err error) {
	if op.State != OpPending {
		return false, nil
	}
	if !w.claim(op) {
		return true, errors.New(busy)
	}
	err = w.settle(ctx, op)
	w.release(op)
	return op.State == OpPending, err
}

// dropSpent deletes spendable proof records the mint says are spent.
func (w *Wallet) dropSpent(ys []string) error {
	if len(ys) == 0 {
		return nil
	}
	err := w.db.Update(func(txn *kv.Txn) error {
		var lost uint64
		for _, y := range ys {
			var rec proofRecord
			found, err := kv.GetJSON(txn, w.key(kindProof, y), &rec)
			if err != nil {
				return err
			}
			if found && (rec.State == proofUnspent || rec.State == proofQuarantined) {
				if err := txn.Delete(w.key(kindProof, y)); err != nil {
					return err
				}
				lost += rec.Proof.Amount // the wallet held them; someone else spent them
			}
		}
		return w.addTotals(txn, Totals{LostSats: lost})
	})
	if err != nil {
		return fmt.Errorf("ecash: dropping spent proofs: %w", err)
	}
	return w.refreshBalance()
}

// QuarantineSpent is Audit, and then takes the spendable proofs the mint
// says are spent out of the balance into quarantine: a mint that says so
// will not honour them, so they count as lost to it, yet they are kept
// (unlike Tidy, which drops them) in case it was only its answer that
// lied. A proof an operation reserved since it was asked about is left
// to that operation.
func (w *Wallet) QuarantineSpent(ctx context.Context) (Audit, error) {
	a, err := w.Audit(ctx)
	if err != nil || len(a.spent) == 0 {
		return a, err
	}
	err = w.db.Update(func(txn *kv.Txn) error {
		for _, y := range a.spent {
			var rec proofRecord
			found, err := kv.GetJSON(txn, w.key(kindProof, y), &rec)
			if err != nil {
				return err
			}
			if !found || rec.State != proofUnspent {
				continue
			}
			rec.State, rec.Reason = proofQuarantined, "the mint says it is spent (NUT-07)"
			if err := kv.PutJSON(txn, w.key(kindProof, y), rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return a, fmt.Errorf("ecash: quarantining proofs the mint says are spent: %w", err)
	}
	return a, w.refreshBalance()
}
