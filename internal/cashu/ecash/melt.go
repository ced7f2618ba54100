package ecash

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Melt quote states (NUT-05).
const (
	Unpaid = "UNPAID"
	Paid   = "PAID"
)

// Payment is what became of a melt.
type Payment struct {
	State    string // Paid, Pending or Unpaid (failed: the wallet has its ecash back)
	Preimage string // as the mint gave it; the caller checks it against the invoice
	Fee      uint64 // what paying cost beyond the quote's amount (input fees, Lightning fee net of change); the most it can cost while pending; what a failed one cost
	Change   uint64 // fee reserve returned (NUT-08)
	Unsure   bool   // the melt request got no answer; "unpaid" may still turn into "paid"
	Reason   string
}

// MeltQuote asks the mint what paying invoice costs.
func (w *Wallet) MeltQuote(ctx context.Context, invoice string) (MeltQuote, error) {
	return w.c.meltQuote(ctx, invoice)
}

// Melt pays the quote's invoice, unless that leaves less than keep. An
// error means no payment was attempted (Payment.Fee is then what preparing
// its inputs cost) (or the wallet could not tell and
// the operation stays pending for MeltStatus); every attempted payment
// comes back as a Payment. Melting a quote twice returns the first melt's
// state.
func (w *Wallet) Melt(ctx context.Context, q MeltQuote, keep uint64) (Payment, error) {
	if op, found, err := w.opByRef(q.Quote); err != nil {
		return Payment{}, err
	} else if found && op.Kind == kindMelt {
		return w.MeltStatus(ctx, q.Quote)
	}
	if err := w.ensureKeysets(ctx); err != nil {
		return Payment{}, err
	}
	// Proofs the mint refuses are quarantined and the melt is tried again
	// with others (with fresh keysets when the mint's changed): the quote
	// is still unpaid then.
	var cost uint64
	for attempt := 1; ; attempt++ {
		p, refused, err := w.meltOnce(ctx, q, keep)
		p.Fee += cost
		if err != nil || refused == nil || attempt == maxAttempts || !w.retryable(ctx, refused) {
			if err == nil && p.State == "" { // its inputs were refused before it began
				err = refused
			}
			return p, err
		}
		cost = p.Fee
		w.log.Info("ecash: trying the melt again", "quote", q.Quote, "attempt", attempt+1, "after", refused)
	}
}

// meltOnce is one attempt of Melt. refused is set when the mint refused
// the attempt's proofs or keysets (the payment then failed, nothing
// moved).
func (w *Wallet) meltOnce(ctx context.Context, q MeltQuote, keep uint64) (p Payment, refused error, err error) {
	ks, err := w.activeKeyset()
	if err != nil {
		return Payment{}, nil, err
	}
	need := q.Amount + q.FeeReserve
	op := Op{ID: newID(), Kind: kindMelt, Purpose: forPayment, Ref: q.Quote, Quote: q.Quote, Amount: q.Amount, FeeReserve: q.FeeReserve}
	change := w.supportsChange()
	err = w.withFunds(ctx, &op, func(txn *kv.Txn, op *Op) error {
		free, inflight, err := w.spendable(txn)
		if err != nil {
			return err
		}
		sel, f, err := pick(free, inflight, need, keep)
		if err != nil {
			return err
		}
		var sum uint64
		for _, h := range sel {
			sum += h.rec.Proof.Amount
		}
		if !change && sum-f != need {
			return errNotExact
		}
		if err := w.reserve(txn, op, sel); err != nil {
			return err
		}
		if change {
			return w.takeOutputs(txn, op, ks, blanks(sum-f-q.Amount), false)
		}
		return nil
	})
	var splitFee uint64
	if errors.Is(err, errNotExact) {
		// A mint without fee return (NUT-08) keeps whatever is paid in
		// excess: make proofs of the exact amount first, held for the melt
		// (marked in flight meanwhile, so nothing frees them).
		w.claim(&op)
		if splitFee, err = w.split(ctx, op.ID, q.Quote, need, keep); err != nil {
			w.release(&op)
			if errors.Is(err, errQuarantined) || errors.Is(err, ErrSpent) || keysetsStale(err) {
				return Payment{Fee: splitFee}, err, nil // the melt never began: try again
			}
			return Payment{Fee: splitFee}, nil, err
		}
		err = w.begin(&op, func(txn *kv.Txn, op *Op) error {
			free, err := w.heldFor(txn, op.ID)
			if err != nil {
				return err
			}
			op.Inputs, op.Own, op.Fee = free, true, splitFee
			return nil
		})
	}
	if err != nil {
		// A split's proofs, if any, are freed as orphans; it was paid for
		// all the same.
		w.release(&op)
		return Payment{Fee: splitFee}, nil, err
	}
	p, err = w.melt(ctx, &op)
	return p, op.refused, err
}

var errNotExact = errors.New("ecash: no exact inputs")

// blanks is the number of blank outputs for a fee return of up to overpaid
// (NUT-08): enough for every power of two it may hold.
func blanks(overpaid uint64) []uint64 {
	if overpaid == 0 {
		return nil
	}
	return repeat(1, max(bits.Len64(overpaid-1), 1)) // ceil(log2(overpaid)), at least 1
}

// split swaps proofs into ones worth exactly need after their input fee,
// reserved for the operation holdFor, and returns what the swap cost (also
// with an error: a swap the mint carried out whose proofs could not be
// made).
func (w *Wallet) split(ctx context.Context, holdFor, quote string, need, keep uint64) (uint64, error) {
	ks, err := w.activeKeyset()
	if err != nil {
		return 0, err
	}
	parts, _, ok := ks.sendSplit(need)
	if !ok {
		return 0, fmt.Errorf("ecash: keyset %s cannot represent %d", ks.ID, need)
	}
	var value uint64
	for _, a := range parts {
		value += a
	}
	op := Op{Kind: kindSwap, Purpose: forSplit, HoldFor: holdFor, Ref: "split:" + quote}
	var f uint64
	err = w.withFunds(ctx, &op, func(txn *kv.Txn, op *Op) error {
		free, inflight, err := w.spendable(txn)
		if err != nil {
			return err
		}
		sel, sf, err := pick(free, inflight, value, keep)
		if err != nil {
			return err
		}
		f = sf
		op.Fee = sf
		if err := w.reserve(txn, op, sel); err != nil {
			return err
		}
		rest, ok := ks.split(op.Inputs.Amount() - sf - value)
		if !ok {
			return fmt.Errorf("ecash: keyset %s cannot represent the change", ks.ID)
		}
		if err := w.takeOutputs(txn, op, ks, parts, true); err != nil {
			return err
		}
		return w.takeOutputs(txn, op, ks, rest, false)
	})
	if err != nil {
		return 0, err
	}
	if err := w.swap(ctx, &op); err != nil {
		return op.cost(), err // a swap the mint carried out without making the proofs still cost its fee
	}
	return f, nil
}

// heldFor lists the proofs reserved for operation id.
func (w *Wallet) heldFor(txn *kv.Txn, id string) (cashu.Proofs, error) {
	var out cashu.Proofs
	err := kv.EachJSON(txn, w.key(kindProof), nil, false, func(_ []byte, rec proofRecord) (bool, error) {
		if rec.State == proofReserved && rec.Op == id {
			out = append(out, rec.Proof)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("ecash: the melt's inputs are gone")
	}
	return out, nil
}

// melt sends op's melt request and records the outcome.
func (w *Wallet) melt(ctx context.Context, op *Op) (Payment, error) {
	defer w.release(op)
	// A melt that fails before it reaches the mint cost what preparing its
	// inputs did (op.Fee: a split's fee), as its record says.
	_, msgs, err := w.sec.blind(op.Outputs)
	if err != nil {
		return Payment{Fee: op.Fee}, w.fail(op, err)
	}
	res, err := w.c.melt(ctx, op.Quote, op.Inputs, msgs)
	if me := AsMintError(err); me != nil && me.NotSent {
		return Payment{Fee: op.Fee}, w.fail(op, err) // it never reached the mint: nothing was attempted
	}
	if err != nil {
		w.log.Warn("ecash: melt request failed; asking the mint", "op", op.ID, "quote", op.Quote, "err", err)
		op.Answered = answered(err)
		return w.settleMelt(ctx, op, err)
	}
	op.Answered = true
	switch res.State {
	case Paid:
		return w.paid(ctx, op, res)
	case Pending:
		return w.stillPending(op, false, "the Lightning payment is in flight")
	case Unpaid:
		return w.unpaid(ctx, op, "the Lightning payment failed")
	}
	return w.settleMelt(ctx, op, incompatible(w.mint, "/v1/melt/bolt11", "unknown melt state %q", res.State))
}

// settleMelt finds out what became of a melt from its quote's state.
func (w *Wallet) settleMelt(ctx context.Context, op *Op, cause error) (Payment, error) {
	q, err := w.c.meltQuoteState(ctx, op.Quote)
	if err != nil {
		return w.stillPending(op, true, "the payment's outcome is not known yet")
	}
	switch q.State {
	case Paid:
		return w.paid(ctx, op, q)
	case Pending:
		return w.pending(ctx, op, q)
	case Unpaid:
		// After a request that got no answer (or a crash before it could),
		// "unpaid" may still turn: the request may reach the mint late.
		if !op.Answered && w.now().Unix()-op.Attempted < int64(w.cfg.UnsureGrace.Seconds()) {
			return w.stillPending(op, true, "the payment's outcome is not known yet")
		}
		out, pending, err := w.inputOutcome(ctx, op)
		if err != nil {
			return w.stillPending(op, true, "the payment's outcome is not known yet")
		}
		if pending {
			return w.stillPending(op, false, "the mint still holds the inputs")
		}
		if len(out.spent) > 0 {
			for _, y := range out.spent {
				op.Lost += w.inputAmount(op, y)
			}
			w.log.Error("ecash: a melt the mint says is unpaid spent its inputs; their sats are lost", "op", op.ID, "quote", op.Quote, "spent", len(out.spent), "sats", op.Lost)
			op.refused = fmt.Errorf("%w: %v", ErrSpent, cause)
		}
		if w.sortRefused(op, cause, &out) || keysetsStale(cause) {
			op.refused = fmt.Errorf("%w: %w", errQuarantined, cause)
			if keysetsStale(cause) {
				op.refused = cause
			}
		}
		reason := "the Lightning payment failed"
		if me := AsMintError(cause); me != nil && me.Detail != "" {
			reason = "the mint refused: " + me.Detail
		}
		op.State, op.Reason = OpFailed, reason
		if err := w.commit(op, out); err != nil {
			return Payment{}, err
		}
		return w.payment(op), nil
	}
	return w.stillPending(op, true, fmt.Sprintf("unknown melt state %q", q.State))
}

// paid records a paid melt, with its fee return: the signatures in the
// answer, or else those the mint restores on the blank outputs.
func (w *Wallet) paid(ctx context.Context, op *Op, q MeltQuote) (Payment, error) {
	var change []cashu.Proof
	if len(q.Change) > 0 {
		// Each signature on its own: one that does not verify is restored
		// or given up, the rest of the fee return is kept.
		proofs, bad, err := w.verify(op.Outputs, q.Change, false)
		if err != nil {
			w.log.Error("ecash: the mint's fee return does not fit the request; restoring it", "op", op.ID, "err", err)
			proofs, bad = make([]cashu.Proof, len(op.Outputs)), map[int]error{}
			for i := range op.Outputs {
				bad[i] = err
			}
			q.Change = nil
		}
		op.Lost = w.repair(ctx, op, q.Change, proofs, bad)
		for _, p := range proofs {
			if p.C != "" {
				change = append(change, p)
			}
		}
	} else if len(op.Outputs) > 0 {
		got, err := w.restored(ctx, op.Outputs)
		if err != nil && ProblemOf(err) == Unreachable {
			return w.stillPending(op, false, "the payment is made; its fee return is not collected yet")
		}
		if err != nil {
			w.log.Error("ecash: the mint's fee return cannot be restored; it is lost", "op", op.ID, "err", err)
		}
		for i := range op.Outputs {
			if p, ok := got[i]; ok {
				change = append(change, p)
			}
		}
	}
	out := outcome{keep: change}
	ys, err := inputYs(op)
	if err != nil {
		return Payment{}, err
	}
	out.spent = ys
	var back uint64
	for _, p := range change {
		back += p.Amount
	}
	spentSats := op.Inputs.Amount() - back - min(op.Lost, op.Inputs.Amount()-back)
	op.Fee += spentSats - min(spentSats, op.Amount)
	op.Received, op.State, op.Reason = back, OpDone, ""
	if q.Preimage != nil {
		op.Preimage = *q.Preimage
	}
	if err := w.commit(op, out); err != nil {
		return Payment{}, err
	}
	return w.payment(op), nil
}

// pending settles a melt whose quote the mint says is still pending. Its
// inputs are then pending too (NUT-05); a mint that says every one of them
// is spent took them as paid, whatever it says of the quote, so the melt
// is recorded paid: its sats never come back, and the caller checks the
// payment by its preimage (none here).
func (w *Wallet) pending(ctx context.Context, op *Op, q MeltQuote) (Payment, error) {
	out, pending, err := w.inputOutcome(ctx, op)
	if err != nil || pending || len(out.release) > 0 || len(out.spent) == 0 {
		return w.stillPending(op, false, "the Lightning payment is in flight")
	}
	w.log.Warn("ecash: the mint says a melt is pending but spent all its inputs; recording it paid", "op", op.ID, "quote", op.Quote)
	q.Preimage = nil
	return w.paid(ctx, op, q)
}

func (w *Wallet) stillPending(op *Op, unsure bool, reason string) (Payment, error) {
	op.Reason = reason
	if err := w.commit(op, outcome{}); err != nil {
		return Payment{}, err
	}
	if op.State != OpPending { // settled meanwhile
		return w.payment(op), nil
	}
	p := w.payment(op)
	p.Unsure = unsure
	return p, nil
}

// unpaid records a melt the mint answered unpaid. Its inputs are asked
// about first (NUT-07): a mint that answers unpaid while it spent them
// kept their sats, which are booked lost and never spent again (nor is the
// melt tried again with others, which it could keep too).
func (w *Wallet) unpaid(ctx context.Context, op *Op, reason string) (Payment, error) {
	out, pending, err := w.inputOutcome(ctx, op)
	switch {
	case err != nil:
		return w.stillPending(op, true, "the payment failed; its inputs' state is not known yet")
	case pending:
		return w.stillPending(op, false, "the mint still holds the inputs")
	}
	for _, y := range out.spent {
		op.Lost += w.inputAmount(op, y)
	}
	if op.Lost > 0 {
		w.log.Error("ecash: a melt the mint answered unpaid spent its inputs; their sats are lost", "op", op.ID, "quote", op.Quote, "sats", op.Lost)
	}
	op.State, op.Reason = OpFailed, reason
	if err := w.commit(op, out); err != nil {
		return Payment{}, err
	}
	return w.payment(op), nil
}

// payment is the Payment a settled melt operation describes.
func (w *Wallet) payment(op *Op) Payment {
	switch op.State {
	case OpDone:
		return Payment{State: Paid, Preimage: op.Preimage, Fee: op.Fee, Change: op.Received}
	case OpFailed:
		return Payment{State: Unpaid, Reason: op.Reason, Fee: op.Fee} // the fee of preparing its inputs
	}
	return Payment{State: Pending, Reason: op.Reason, Fee: op.Fee + op.Inputs.Amount() - min(op.Inputs.Amount(), op.Amount)}
}

// MeltStatus is the state of the melt of quote: recorded, or asked of the
// mint for a melt still pending (collecting its fee return once paid, or
// taking the ecash back once it failed). A quote the wallet never melted is
// only asked about.
func (w *Wallet) MeltStatus(ctx context.Context, quote string) (Payment, error) {
	op, found, err := w.opByRef(quote)
	if err != nil {
		return Payment{}, err
	}
	if !found || op.Kind != kindMelt {
		q, err := w.c.meltQuoteState(ctx, quote)
		if err != nil {
			return Payment{}, err
		}
		p := Payment{State: q.State}
		if q.Preimage != nil {
			p.Preimage = *q.Preimage
		}
		if q.State != Paid && q.State != Pending {
			p.State = Unpaid
			// A melt that never began may have had its inputs prepared:
			// once that swap is settled, they are the wallet's again and
			// the swap's fee is what the payment cost.
			sop, found, err := w.opByRef("split:" + quote)
			switch {
			case err != nil:
				return Payment{}, err
			case found && sop.State == OpPending:
				if w.claim(&sop) {
					if err := w.settle(ctx, &sop); err != nil {
						w.log.Debug("ecash: a melt's input swap is not settled yet", "op", sop.ID, "err", err)
					}
					w.release(&sop)
				}
				if sop.State == OpPending {
					return Payment{State: Pending, Unsure: true, Reason: "the payment's inputs are being settled"}, nil
				}
				fallthrough
			case found && sop.State == OpDone:
				if !sop.Abandoned { // else the wallet booked it (the split's call returned before it settled)
					p.Fee = sop.Fee
				}
				if err := w.freeOrphans(); err != nil {
					return Payment{}, err
				}
			}
		}
		return p, nil
	}
	if op.State != OpPending {
		return w.payment(&op), nil
	}
	if !w.claim(&op) {
		return w.payment(&op), nil // a call of this process is settling it
	}
	defer w.release(&op)
	return w.settleMelt(ctx, &op, nil)
}

// claim marks op in flight in this process unless it is already.
func (w *Wallet) claim(op *Op) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight[op.ID] {
		return false
	}
	w.inflight[op.ID] = true
	return true
}
