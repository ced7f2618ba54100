package ecash

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Sent is ecash taken out of the wallet as a token.
type Sent struct {
	Proofs cashu.Proofs
	Amount uint64 // what the receiver gets after swapping them
	Fee    uint64 // what the wallet paid on top: its swap's input fee and the receiver's
	Op     string
}

// Send takes proofs worth amount, plus the input fee the receiver will pay
// to swap them, out of the wallet, unless that leaves less than keep. ref
// files the operation for Reclaim (e.g. a claim id). Proofs the mint
// refuses are quarantined and the send is tried again with others (and
// with fresh keysets when the mint's changed), a few times. On an error,
// Sent.Fee is what the failed attempts cost.
func (w *Wallet) Send(ctx context.Context, ref string, amount, keep uint64) (Sent, error) {
	return w.sendAll(ctx, ref, amount, keep, "")
}

// sendAll is Send, its outputs locked to lock (a P2PK key) when it is set.
func (w *Wallet) sendAll(ctx context.Context, ref string, amount, keep uint64, lock string) (Sent, error) {
	if amount == 0 {
		return Sent{}, errors.New("ecash: nothing to send")
	}
	if err := w.ensureKeysets(ctx); err != nil {
		return Sent{}, err
	}
	var spent uint64
	for attempt := 1; ; attempt++ {
		s, err := w.send(ctx, ref, amount, keep, lock)
		s.Fee += spent
		if err == nil || attempt == maxAttempts || !w.retryable(ctx, err) {
			return s, err
		}
		spent = s.Fee
		w.log.Info("ecash: trying the send again", "ref", ref, "attempt", attempt+1, "after", err)
	}
}

// maxAttempts bounds how often one call tries an operation again after
// the mint refused its proofs or keysets.
const maxAttempts = 4

func (w *Wallet) send(ctx context.Context, ref string, amount, keep uint64, lock string) (Sent, error) {
	ks, err := w.activeKeyset()
	if err != nil {
		return Sent{}, err
	}
	parts, recvFee, ok := ks.sendSplit(amount)
	if !ok {
		return Sent{}, fmt.Errorf("ecash: keyset %s cannot represent %d", ks.ID, amount)
	}
	var value uint64
	for _, a := range parts {
		value += a
	}
	op := Op{Kind: kindSwap, Purpose: forSend, Ref: ref}
	if lock != "" {
		op.Purpose = forLock
	}
	err = w.withFunds(ctx, &op, func(txn *kv.Txn, op *Op) error {
		free, inflight, err := w.spendable(txn)
		if err != nil {
			return err
		}
		sel, f, err := pick(free, inflight, value, keep)
		if err != nil {
			return err
		}
		op.Fee = f + recvFee // written before the request leaves, like all of the operation
		op.SentAmount = value
		if err := w.reserve(txn, op, sel); err != nil {
			return err
		}
		change, ok := ks.split(op.Inputs.Amount() - f - value)
		if !ok {
			return fmt.Errorf("ecash: keyset %s cannot represent the change", ks.ID)
		}
		if err := w.takeOutputs(txn, op, ks, parts, true); err != nil {
			return err
		}
		for i := range op.Outputs {
			op.Outputs[i].Lock = lock
		}
		return w.takeOutputs(txn, op, ks, change, false)
	})
	if err != nil {
		return Sent{}, err
	}
	if err := w.swap(ctx, &op); err != nil {
		return Sent{Fee: op.cost(), Op: op.ID}, err
	}
	return Sent{Proofs: op.Sent, Amount: value - recvFee, Fee: op.Fee, Op: op.ID}, nil
}

// swap sends op's swap request and records the outcome. A request that
// never reached the mint gives its inputs back at once; when the answer is
// lost, the mint is asked what it did; if it cannot be asked either, op
// stays pending for Recover and the error is returned.
func (w *Wallet) swap(ctx context.Context, op *Op) error {
	defer w.release(op)
	defer w.abandon(op) // before release: Recover leaves op alone until then
	_, msgs, err := w.sec.blind(op.Outputs)
	if err != nil {
		return w.fail(op, err)
	}
	op.Attempted = w.now().Unix()
	sigs, err := w.c.swap(ctx, op.Inputs, msgs)
	if me := AsMintError(err); me != nil && me.NotSent {
		return w.fail(op, err)
	}
	if err != nil {
		w.log.Debug("ecash: swap failed; asking the mint what it did", "op", op.ID, "err", err)
		return w.settleSwap(ctx, op, err)
	}
	proofs, bad, err := w.verify(op.Outputs, sigs, true)
	if err != nil {
		w.log.Error("ecash: the mint's swap answer does not fit the request", "op", op.ID, "err", err)
		return w.settleSwap(ctx, op, err)
	}
	op.Lost = w.repair(ctx, op, sigs, proofs, bad)
	return w.commitSwap(op, proofs)
}

// abandon records, when the call that made op returns while op is still
// pending, that its caller was told it cost nothing (Sent.Fee, the split's
// fee: op.cost() of a pending operation) and books nothing more of it:
// whatever it turns out to cost once Recover settles it (the mint carried
// it out after the wallet gave up on the request: its input fee was paid)
// is booked by the wallet, with its housekeeping (Totals.InternalFeeSats).
// A split's outputs are then no longer held for its melt, which never
// began: they are the wallet's, so its cost is its fee alone. Likewise a
// Receive filed under no ref, whose caller cannot look its outcome up:
// what it brings in is booked as the mint's surplus (Totals.SurplusSats).
func (w *Wallet) abandon(op *Op) {
	if op.State != OpPending {
		return
	}
	if !(op.Own && (op.Purpose == forSend || op.Purpose == forSplit)) && !(op.Purpose == forReceive && op.Ref == "") {
		return
	}
	err := w.db.Record(func(txn *kv.Txn) error {
		cur, found, err := w.getOp(txn, op.ID)
		if err != nil || !found || cur.State != OpPending {
			return err
		}
		cur.Abandoned, cur.HoldFor = true, ""
		return w.putOp(txn, cur)
	})
	if err != nil {
		w.log.Error("ecash: could not record that an operation's caller gave up on it; its fee may go unbooked", "op", op.ID, "err", err)
		return
	}
	op.Abandoned, op.HoldFor = true, ""
}

// commitSwap records a swap the mint answered: proofs are its outputs'
// proofs, in order, zero where a signature was given up (op.Lost); a
// token's go to op.Sent (or stay reserved for HoldFor) when all of them
// verified, and are the wallet's otherwise: no token is made of part of
// its proofs.
func (w *Wallet) commitSwap(op *Op, proofs []cashu.Proof) error {
	whole := true
	for i, p := range proofs {
		if op.Outputs[i].Send && p.C == "" {
			whole = false
		}
	}
	var out outcome
	for i, p := range proofs {
		switch {
		case p.C == "":
		case op.Outputs[i].Send && whole && op.HoldFor != "":
			out.hold = append(out.hold, p)
		case op.Outputs[i].Send && whole:
			out.sent = append(out.sent, p)
		case op.Outputs[i].Lock != "":
			// Locked to the receiver, so never the wallet's; not handed
			// out either, as the rest of the payout did not verify.
			op.Lost += p.Amount
		default:
			out.keep = append(out.keep, p)
			op.Received += p.Amount
		}
	}
	if op.Own {
		ys, err := inputYs(op)
		if err != nil {
			return err
		}
		out.spent = ys
	}
	op.State = OpDone
	if !whole {
		op.SentAmount, op.Reason = 0, "the mint's signatures on the token did not verify; no token was made"
	}
	if err := w.commit(op, out); err != nil {
		return err
	}
	if !whole && (op.Purpose == forSend || op.Purpose == forSplit || op.Purpose == forLock) {
		return &MintError{Problem: Faulty, Mint: w.mint, Path: "/v1/swap", Detail: "the mint's signatures on the token did not verify (NUT-12); nothing was handed out"}
	}
	return nil
}

// settleSwap finds out what became of a swap whose answer was lost or
// refused, and records it. cause is what the request returned.
func (w *Wallet) settleSwap(ctx context.Context, op *Op, cause error) error {
	// Inputs first: a mint stores its signatures before it marks the
	// inputs spent, so spent inputs mean the signatures can be restored.
	out, pending, err := w.inputOutcome(ctx, op)
	if err != nil {
		return w.stayPending(op, cause, err)
	}
	if pending {
		return w.stayPending(op, cause, errors.New("the mint holds some inputs as pending"))
	}
	spent := len(out.spent)
	if spent == 0 && !answered(cause) && w.now().Sub(time.Unix(op.Attempted, 0)) < 2*w.cfg.Timeout {
		// A request that got no answer (or whose process died) may still
		// be on its way or in the mint's queue: its inputs are not the
		// wallet's again until it cannot arrive any more.
		return w.stayPending(op, cause, errors.New("the request may still reach the mint"))
	}
	got, err := w.restoredIfAny(ctx, op)
	if err != nil {
		return w.stayPending(op, cause, err)
	}
	if len(got) > 0 && spent > 0 {
		return w.happened(ctx, op, got, out, cause)
	}
	if len(got) > 0 {
		// Signatures on these outputs, yet the inputs are unspent: the mint
		// signed and then did not carry the swap out (gonuts saves its
		// signatures before it marks inputs spent, and a crash between
		// leaves both), or they were made for another operation. Keep what
		// is spendable of them, booked as the mint's surplus; this swap did
		// not happen.
		w.log.Error("ecash: the mint had signed outputs of an operation that did not happen", "op", op.ID, "outputs", len(got))
		if err := w.keepRestored(ctx, op, got, &out); err != nil {
			return w.stayPending(op, cause, err)
		}
		out.hold, out.sent = nil, nil
		op.Surplus = op.Received
	}
	if spent > 0 && op.Own {
		// The mint says proofs the wallet held were spent, and none of
		// this swap's outputs were signed: spent elsewhere.
		for _, y := range out.spent {
			op.Lost += w.inputAmount(op, y)
		}
		w.log.Error("ecash: proofs the wallet held were spent elsewhere; their sats are lost", "op", op.ID, "spent", spent, "sats", op.Lost)
	}
	quarantined := w.sortRefused(op, cause, &out)
	op.State, op.Reason = OpFailed, errText(cause)
	if err := w.commit(op, out); err != nil {
		return err
	}
	switch {
	case spent > 0:
		return fmt.Errorf("%w: %v", ErrSpent, cause)
	case quarantined:
		return fmt.Errorf("%w: %w", errQuarantined, cause)
	}
	return cause
}

// happened records a swap the mint carried out (its inputs are spent and
// it restores signatures on its outputs) whose answer the caller never saw,
// so a token's outputs stay the wallet's. Restored proofs are checked
// too: NUT-13 restores may find spent ones.
func (w *Wallet) happened(ctx context.Context, op *Op, got map[int]cashu.Proof, out outcome, cause error) error {
	if len(got) != len(op.Outputs) {
		w.log.Error("ecash: the mint restored only some outputs of a swap", "op", op.ID, "restored", len(got), "outputs", len(op.Outputs))
		for i, o := range op.Outputs {
			if _, ok := got[i]; !ok {
				op.Lost += o.Amount
			}
		}
	}
	if err := w.keepRestored(ctx, op, got, &out); err != nil {
		return w.stayPending(op, cause, err)
	}
	out.spent, out.release = append(out.spent, out.release...), nil
	op.State, op.Reason = OpDone, "recovered from the mint (NUT-09)"
	if op.Purpose == forLock {
		// Outputs locked to the receiver are theirs whatever the caller
		// saw: the payout was made, and is handed out from op.Sent.
		op.SentAmount = out.sent.Amount()
		return w.commit(op, out)
	}
	op.SentAmount = 0 // no token was made: its outputs are the wallet's
	if err := w.commit(op, out); err != nil {
		return err
	}
	if op.Purpose == forSend {
		return fmt.Errorf("ecash: the token was not made: %w", cause)
	}
	return nil
}

// inputAmount is the amount of op's input whose Y is y.
func (w *Wallet) inputAmount(op *Op, y string) uint64 {
	for _, p := range op.Inputs {
		if py, err := proofY(p.Secret); err == nil && py == y {
			return p.Amount
		}
	}
	return 0
}

// sortRefused moves the inputs the mint refused as they are out of
// out.release into out.quarantine: those whose own DLEQ proof fails or
// whose keyset the wallet no longer knows, or, when none of them can be
// told apart that way, all of them (Tidy offers each alone again).
func (w *Wallet) sortRefused(op *Op, cause error, out *outcome) bool {
	if !op.Own || len(out.release) == 0 || !(proofsRefused(cause) || (keysetsStale(cause) && w.inputsUnknown(op))) {
		return false
	}
	byY := map[string]cashu.Proof{}
	for _, p := range op.Inputs {
		if y, err := proofY(p.Secret); err == nil {
			byY[y] = p
		}
	}
	var bad, good []string
	for _, y := range out.release {
		if w.checkOwn(byY[y]) {
			good = append(good, y)
		} else {
			bad = append(bad, y)
		}
	}
	if len(bad) == 0 {
		bad, good = good, nil
	}
	out.quarantine, out.release = bad, good
	out.why = "the mint refused it: " + errText(cause)
	w.log.Warn("ecash: the mint refused proofs; taking them out of the spendable set", "op", op.ID, "proofs", len(bad), "err", cause)
	return true
}

// inputsUnknown reports whether an input of op is of a keyset the wallet
// does not know or the mint no longer lists. (An inactive keyset's proofs
// are still spendable; a refusal naming a keyset then is about outputs.)
func (w *Wallet) inputsUnknown(op *Op) bool {
	for _, p := range op.Inputs {
		if k := w.keyset(p.Id); k == nil || k.Gone {
			return true
		}
	}
	return false
}

// keepRestored adds the restored proofs the mint says are unspent to out.
func (w *Wallet) keepRestored(ctx context.Context, op *Op, got map[int]cashu.Proof, out *outcome) error {
	idx := make([]int, 0, len(got))
	ys := make([]string, 0, len(got))
	for i := range op.Outputs {
		if p, ok := got[i]; ok {
			y, err := proofY(p.Secret)
			if err != nil {
				return err
			}
			idx, ys = append(idx, i), append(ys, y)
		}
	}
	states, err := w.c.checkState(ctx, ys)
	if err != nil {
		return err
	}
	for j, i := range idx {
		p := got[i]
		switch {
		case states[j] != Unspent:
		case op.Outputs[i].Lock != "":
			out.sent = append(out.sent, p) // only its receiver can spend it
		case op.Outputs[i].Send && op.HoldFor != "":
			out.hold = append(out.hold, p)
		default:
			out.keep = append(out.keep, p)
			op.Received += p.Amount
		}
	}
	return nil
}

// inputOutcome sorts op's own inputs by what the mint says of them: spent
// ones out, unspent ones back; pending is set when the mint still holds
// some.
func (w *Wallet) inputOutcome(ctx context.Context, op *Op) (out outcome, pending bool, err error) {
	states, err := w.inputStates(ctx, op)
	if err != nil {
		return outcome{}, false, err
	}
	ys, err := inputYs(op)
	if err != nil {
		return outcome{}, false, err
	}
	for i, st := range states {
		switch st {
		case Unspent:
			out.release = append(out.release, ys[i])
		case Spent:
			out.spent = append(out.spent, ys[i])
		default:
			pending = true
		}
	}
	return out, pending, nil
}

// restoredIfAny is restored for op's outputs, or nothing from a mint
// without a restore endpoint (NUT-09), where the inputs alone must tell.
func (w *Wallet) restoredIfAny(ctx context.Context, op *Op) (map[int]cashu.Proof, error) {
	got, err := w.restored(ctx, op.Outputs)
	if me := AsMintError(err); me != nil && me.Problem == Incompatible && me.Status != 0 {
		w.log.Warn("ecash: the mint cannot restore signatures", "op", op.ID, "err", err)
		return nil, nil
	}
	return got, err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (w *Wallet) inputStates(ctx context.Context, op *Op) ([]string, error) {
	ys, err := inputYs(op)
	if err != nil {
		return nil, err
	}
	return w.c.checkState(ctx, ys)
}

// stayPending leaves op for Recover; cause is the caller's answer.
func (w *Wallet) stayPending(op *Op, cause, why error) error {
	w.log.Warn("ecash: operation left pending until the mint can be asked", "op", op.ID, "kind", op.Kind, "cause", cause, "err", why)
	if ProblemOf(cause) != 0 {
		return cause
	}
	return why
}

// fail records op as failed before its request left: its reservations
// are released.
func (w *Wallet) fail(op *Op, cause error) error {
	var out outcome
	if op.Own {
		ys, err := inputYs(op)
		if err != nil {
			return err
		}
		out.release = ys
	}
	op.State, op.Reason = OpFailed, errText(cause)
	if err := w.commit(op, out); err != nil {
		return err
	}
	return cause
}

// Receive swaps someone else's proofs (a token's, of this mint) into the
// wallet and returns what it received after the input fee: what the mint
// owes for them, including outputs whose signatures never verified (lost
// to the mint, in Totals).
func (w *Wallet) Receive(ctx context.Context, ref string, proofs cashu.Proofs) (received, fees uint64, err error) {
	if len(proofs) == 0 {
		return 0, 0, errors.New("ecash: no proofs")
	}
	if err := w.ensureKeysets(ctx); err != nil {
		return 0, 0, err
	}
	full, err := w.resolveIDs(ctx, proofs)
	if err != nil {
		return 0, 0, err
	}
	op := Op{Kind: kindSwap, Purpose: forReceive, Ref: ref}
	if err := w.swapIn(ctx, &op, full); err != nil {
		return 0, 0, err
	}
	return op.Received + op.Lost, op.Fee, nil
}

// swapIn swaps proofs the wallet does not hold as its own into new outputs
// of the active keyset.
func (w *Wallet) swapIn(ctx context.Context, op *Op, proofs cashu.Proofs) error {
	ks, err := w.activeKeyset()
	if err != nil {
		return err
	}
	ppk := make([]uint64, len(proofs))
	for i, p := range proofs {
		k := w.keyset(p.Id)
		if k == nil {
			return fmt.Errorf("ecash: unknown keyset %s", p.Id)
		}
		ppk[i] = k.InputFeePpk
	}
	f := fee(ppk)
	total := proofs.Amount()
	if total <= f {
		return fmt.Errorf("ecash: %d sats of proofs do not cover their input fee of %d", total, f)
	}
	amounts, ok := ks.split(total - f)
	if !ok {
		return fmt.Errorf("ecash: keyset %s cannot represent %d", ks.ID, total-f)
	}
	err = w.begin(op, func(txn *kv.Txn, op *Op) error {
		op.Inputs, op.Fee = proofs, f
		return w.takeOutputs(txn, op, ks, amounts, false)
	})
	if err != nil {
		return err
	}
	return w.swap(ctx, op)
}

// resolveIDs gives proofs their full keyset ids (tokens may carry short
// ones, NUT-00), asking the mint for its keysets when one is unknown.
func (w *Wallet) resolveIDs(ctx context.Context, proofs cashu.Proofs) (cashu.Proofs, error) {
	out := make(cashu.Proofs, len(proofs))
	refreshed := false
	for i, p := range proofs {
		k := w.keyset(p.Id)
		if k == nil && !refreshed {
			if err := w.Refresh(ctx); err != nil {
				return nil, err
			}
			refreshed = true
			k = w.keyset(p.Id)
		}
		if k == nil {
			return nil, fmt.Errorf("%w: keyset %s is not one of the mint's", ErrUnknownKeyset, p.Id)
		}
		p.Id = k.ID
		out[i] = p
	}
	return out, nil
}

// ErrUnknownKeyset: proofs name a keyset the mint does not have (or a short
// id that fits several).
var ErrUnknownKeyset = errors.New("ecash: unknown keyset")

// States asks the mint for the state of each proof (NUT-07), in order.
func (w *Wallet) States(ctx context.Context, proofs cashu.Proofs) ([]string, error) {
	ys := make([]string, len(proofs))
	for i, p := range proofs {
		y, err := proofY(p.Secret)
		if err != nil {
			return nil, err
		}
		ys[i] = y
	}
	return w.c.checkState(ctx, ys)
}
