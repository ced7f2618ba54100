package ecash

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Operation kinds and purposes.
const (
	kindMint = "mint" // NUT-04: outputs for a paid mint quote
	kindSwap = "swap" // NUT-03: inputs for outputs
	kindMelt = "melt" // NUT-05: inputs (and blank outputs) for a Lightning payment

	forSend    = "send"    // part of the outputs becomes a token
	forLock    = "lock"    // part of the outputs, locked to a key (NUT-11), is handed out
	forReceive = "receive" // someone else's proofs become the wallet's
	forSplit   = "split"   // exact proofs for a melt
	forRotate  = "rotate"  // proofs of inactive keysets move to an active one
	forReclaim = "reclaim" // a token that was never handed out comes back
	forDeposit = "deposit" // minting a paid quote
	forPayment = "payment" // melting to pay an invoice
	forRetry   = "retry"   // a quarantined proof is offered to the mint again
)

// internal reports whether no caller books what an operation of purpose
// costs: the wallet's own housekeeping.
func internal(purpose string) bool { return purpose == forRotate || purpose == forRetry }

// Operation states.
const (
	OpPending = "pending" // its request may have reached the mint; the outcome is not recorded yet
	OpDone    = "done"
	OpFailed  = "failed"
)

// Op is one operation with the mint, as the store keeps it. Written before
// its request leaves, so whatever the mint did can be found again.
type Op struct {
	ID         string       `json:"id"`
	Kind       string       `json:"kind"`
	Purpose    string       `json:"purpose"`
	Mint       string       `json:"mint"`
	Ref        string       `json:"ref,omitempty"` // the caller's reference (claim id, quote id)
	State      string       `json:"state"`
	Created    int64        `json:"created"`
	Attempted  int64        `json:"attempted,omitempty"` // when its request last left
	Answered   bool         `json:"answered,omitempty"`  // the mint answered its request
	Settled    int64        `json:"settled,omitempty"`
	Inputs     cashu.Proofs `json:"inputs,omitempty"`
	Own        bool         `json:"own,omitempty"` // the inputs are the wallet's (reserved) proofs
	Outputs    []Output     `json:"outputs,omitempty"`
	HoldFor    string       `json:"hold_for,omitempty"` // the Send outputs stay reserved for this operation
	Quote      string       `json:"quote,omitempty"`
	Amount     uint64       `json:"amount,omitempty"` // the quote's amount
	FeeReserve uint64       `json:"fee_reserve,omitempty"`
	Sent       cashu.Proofs `json:"sent,omitempty"` // the token's proofs, while the mint says they are unspent
	SentAmount uint64       `json:"sent_amount,omitempty"`
	Reclaimed  string       `json:"reclaimed,omitempty"` // the operation that took the token back
	Received   uint64       `json:"received,omitempty"`  // sats that became the wallet's
	Fee        uint64       `json:"fee,omitempty"`       // what it cost: input fees, the Lightning fee
	Lost       uint64       `json:"lost,omitempty"`      // sats of outputs whose signatures never verified, or of own inputs spent elsewhere
	Surplus    uint64       `json:"surplus,omitempty"`   // sats the mint signed beyond what it took (it signed, then did not spend the inputs)
	// Abandoned: the call that made it returned while it was pending, its
	// caller told it cost (or brought) nothing; the wallet books its cost
	// (or, for a Receive, what it brought in) once settled.
	Abandoned bool   `json:"abandoned,omitempty"`
	Preimage  string `json:"preimage,omitempty"`
	Reason    string `json:"reason,omitempty"`

	refused error        // this process's attempt was refused for its proofs or keysets: try again
	owed    []owedRecord // outputs given up for now (see repair), written with the outcome
}

func (w *Wallet) getOp(txn *kv.Txn, id string) (Op, bool, error) {
	var op Op
	found, err := kv.GetJSON(txn, w.opKey(id), &op)
	return op, found, err
}

// opByRef finds the newest operation filed under ref.
func (w *Wallet) opByRef(ref string) (op Op, found bool, err error) {
	err = w.db.View(func(txn *kv.Txn) error {
		op, found, err = w.opByRefIn(txn, ref)
		return err
	})
	return op, found, err
}

// opByRefIn is opByRef read in txn.
func (w *Wallet) opByRefIn(txn *kv.Txn, ref string) (Op, bool, error) {
	item, err := txn.Get(w.key(kindRef, ref))
	if errors.Is(err, kv.ErrNotFound) {
		return Op{}, false, nil
	}
	if err != nil {
		return Op{}, false, err
	}
	id, err := item.ValueCopy(nil)
	if err != nil {
		return Op{}, false, err
	}
	return w.getOp(txn, string(id))
}

// plan is the part of an operation's first transaction that picks its
// inputs and takes its counters; it fills op and may run more than once.
type plan func(txn *kv.Txn, op *Op) error

// begin writes op, pending, with what p reserved, and marks it in flight in
// this process. Only after begin returns may its request leave.
func (w *Wallet) begin(op *Op, p plan) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.mu.Unlock()
	base := *op
	if base.ID == "" {
		base.ID = newID()
	}
	base.Mint, base.State, base.Created = w.mint, OpPending, w.now().Unix()
	base.Attempted = base.Created // its request leaves right after
	w.sel.Lock()
	defer w.sel.Unlock()
	err := w.db.Update(func(txn *kv.Txn) error {
		*op = base
		if err := p(txn, op); err != nil {
			return err
		}
		return w.putOp(txn, *op)
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.inflight[op.ID] = true
	w.mu.Unlock()
	return w.refreshBalance()
}

// release ends this process's work on op (after it settled, or when its
// outcome must wait for the background).
func (w *Wallet) release(op *Op) {
	w.mu.Lock()
	delete(w.inflight, op.ID)
	close(w.done)
	w.done = make(chan struct{})
	w.mu.Unlock()
}

// outcome is what an operation did.
type outcome struct {
	keep    cashu.Proofs // new proofs of the wallet
	hold    cashu.Proofs // new proofs reserved for op.HoldFor
	sent    cashu.Proofs // new proofs handed out (op.Sent)
	spent   []string     // Ys of own inputs that are gone
	release []string     // Ys of own inputs that are the wallet's again
	// Ys of own inputs the mint refused as they are (it could not verify
	// them, or does not know their keyset), and why.
	quarantine []string
	why        string
}

// commit records op's outcome, its new state already set, in one
// transaction. An operation settled already (by a concurrent resolve) is
// left as it is; the stored one is returned. The mint has acted already, so
// the outcome is recorded even while the disk is low (kv.DB.Record).
func (w *Wallet) commit(op *Op, out outcome) error {
	if op.State != OpPending && op.Settled == 0 {
		op.Settled = w.now().Unix()
	}
	next := *op
	next.Sent = append(append(cashu.Proofs(nil), op.Sent...), out.sent...)
	var stored Op
	err := w.db.Record(func(txn *kv.Txn) error {
		cur, found, err := w.getOp(txn, op.ID)
		if err != nil {
			return err
		}
		stored = cur
		if found && cur.State != OpPending {
			return nil
		}
		if err := w.apply(txn, op, out); err != nil {
			return err
		}
		if next.State != OpPending {
			if err := w.addTotals(txn, settledTotals(next)); err != nil {
				return err
			}
		}
		stored = next
		if err := w.putOp(txn, next); err != nil {
			return err
		}
		if next.State != OpPending {
			return txn.Delete(w.key(kindOpenOp, op.ID))
		}
		return nil
	})
	if err != nil {
		return err
	}
	*op = stored
	return w.refreshBalance()
}

// apply writes what an outcome does to the wallet's proofs.
func (w *Wallet) apply(txn *kv.Txn, op *Op, out outcome) error {
	now := w.now().Unix()
	for _, p := range out.keep {
		if err := w.putProof(txn, p, proofUnspent, "", now); err != nil {
			return err
		}
	}
	for _, p := range out.hold {
		if err := w.putProof(txn, p, proofReserved, op.HoldFor, now); err != nil {
			return err
		}
	}
	for _, y := range out.spent {
		if err := w.dropInput(txn, op.ID, y); err != nil {
			return err
		}
	}
	for _, y := range out.release {
		if err := w.releaseInput(txn, op.ID, y); err != nil {
			return err
		}
	}
	for _, y := range out.quarantine {
		if err := w.quarantineInput(txn, op.ID, y, out.why); err != nil {
			return err
		}
	}
	for i, o := range op.owed {
		if err := kv.PutJSON(txn, w.key(kindOwed, op.ID, strconv.Itoa(i)), o); err != nil {
			return err
		}
	}
	return nil
}

// putOp writes op with its indexes: its reference, whether it is open,
// whether it has handed-out proofs the mint has not seen redeemed.
func (w *Wallet) putOp(txn *kv.Txn, op Op) error {
	if err := kv.PutJSON(txn, w.opKey(op.ID), op); err != nil {
		return err
	}
	if op.Ref != "" {
		if err := txn.Set(w.key(kindRef, op.Ref), []byte(op.ID)); err != nil {
			return err
		}
	}
	if op.State == OpPending {
		if err := txn.Set(w.key(kindOpenOp, op.ID), nil); err != nil {
			return err
		}
	}
	if len(op.Sent) > 0 {
		return txn.Set(w.key(kindSentOp, op.ID), nil)
	}
	return txn.Delete(w.key(kindSentOp, op.ID))
}

// putProof adds a proof the wallet did not hold; one it holds already keeps
// its record.
func (w *Wallet) putProof(txn *kv.Txn, p cashu.Proof, state, op string, now int64) error {
	y, err := proofY(p.Secret)
	if err != nil {
		return err
	}
	if _, err := txn.Get(w.key(kindProof, y)); err == nil {
		return nil
	} else if !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	return kv.PutJSON(txn, w.key(kindProof, y), proofRecord{Proof: p, State: state, Op: op, Added: now})
}

// dropInput deletes an input proof op reserved.
func (w *Wallet) dropInput(txn *kv.Txn, op, y string) error {
	var rec proofRecord
	found, err := kv.GetJSON(txn, w.key(kindProof, y), &rec)
	if err != nil || !found || rec.Op != op {
		return err
	}
	return txn.Delete(w.key(kindProof, y))
}

// releaseInput makes an input proof op reserved spendable again.
func (w *Wallet) releaseInput(txn *kv.Txn, op, y string) error {
	var rec proofRecord
	found, err := kv.GetJSON(txn, w.key(kindProof, y), &rec)
	if err != nil || !found || rec.Op != op {
		return err
	}
	rec.State, rec.Op, rec.Reason = proofUnspent, "", ""
	return kv.PutJSON(txn, w.key(kindProof, y), rec)
}

// quarantineInput takes an input proof op reserved out of the spendable
// set, with the mint's reason.
func (w *Wallet) quarantineInput(txn *kv.Txn, op, y, why string) error {
	var rec proofRecord
	found, err := kv.GetJSON(txn, w.key(kindProof, y), &rec)
	if err != nil || !found || rec.Op != op {
		return err
	}
	rec.State, rec.Reason = proofQuarantined, why
	return kv.PutJSON(txn, w.key(kindProof, y), rec)
}

// settledTotals is what a settled operation adds to the wallet's Totals.
func settledTotals(op Op) Totals {
	t := Totals{LostSats: op.Lost, SurplusSats: op.Surplus}
	if (internal(op.Purpose) || op.Abandoned) && op.State == OpDone {
		t.InternalFeeSats = op.cost()
	}
	if op.Abandoned && op.State == OpDone && !op.Own {
		// Someone else's proofs, received after their caller gave up:
		// nobody booked them in.
		t.SurplusSats += op.Received + op.Lost
	}
	return t
}

// cost is what a settled operation on the wallet's own proofs took from
// the wallet beyond what it handed out (a token, a payment) and what was
// lost to the mint: its fees.
func (op Op) cost() uint64 {
	if op.State != OpDone || !op.Own {
		return 0
	}
	out := op.Received + op.Lost + op.SentAmount
	if op.Kind == kindMelt {
		out += op.Amount
	}
	in := op.Inputs.Amount() + op.Surplus
	if out >= in {
		return 0
	}
	return in - out
}

// inputYs are the Ys of op's inputs.
func inputYs(op *Op) ([]string, error) {
	ys := make([]string, len(op.Inputs))
	for i, p := range op.Inputs {
		y, err := proofY(p.Secret)
		if err != nil {
			return nil, err
		}
		ys[i] = y
	}
	return ys, nil
}

// --- selection ---

type held struct {
	y   string
	rec proofRecord
	ks  *Keyset
}

// spendable lists the wallet's unspent proofs, and the sum of those
// reserved by operations still in flight in this process.
func (w *Wallet) spendable(txn *kv.Txn) (free []held, inflight uint64, err error) {
	w.mu.Lock()
	running := make(map[string]bool, len(w.inflight))
	for id := range w.inflight {
		running[id] = true
	}
	w.mu.Unlock()
	err = kv.EachJSON(txn, w.key(kindProof), nil, false, func(k []byte, rec proofRecord) (bool, error) {
		switch {
		case rec.State == proofUnspent:
			ks := w.keyset(rec.Proof.Id)
			if ks == nil {
				return true, nil // a keyset the wallet no longer knows; Tidy reports it
			}
			free = append(free, held{y: string(k[len(w.key(kindProof)):]), rec: rec, ks: ks})
		case running[rec.Op]:
			inflight += rec.Proof.Amount
		}
		return true, nil
	})
	return free, inflight, err
}

// errWait means the funds are there once operations in flight settle.
var errWait = errors.New("ecash: waiting for operations in flight")

// pick chooses inputs whose value after their input fee covers target,
// preferring proofs of inactive keysets (NUT-02), then one proof large
// enough, then the largest first. keep is what must remain unspent.
func pick(free []held, inflight, target, keep uint64) ([]held, uint64, error) {
	var total uint64
	for _, h := range free {
		total += h.rec.Proof.Amount
	}
	slices.SortFunc(free, func(a, b held) int {
		if a.ks.Active != b.ks.Active {
			if !a.ks.Active {
				return -1
			}
			return 1
		}
		switch {
		case a.rec.Proof.Amount > b.rec.Proof.Amount:
			return -1
		case a.rec.Proof.Amount < b.rec.Proof.Amount:
			return 1
		}
		return 0
	})
	enough := func(sel []held) (uint64, bool) {
		var sum uint64
		ppk := make([]uint64, len(sel))
		for i, h := range sel {
			sum += h.rec.Proof.Amount
			ppk[i] = h.ks.InputFeePpk
		}
		f := fee(ppk)
		return f, sum >= target+f
	}
	var sel []held
	var f uint64
	ok := false
	if len(free) > 0 && free[0].ks.Active {
		// The smallest single proof that covers target and its fee.
		for i := len(free) - 1; i >= 0; i-- {
			if f1, ok1 := enough(free[i : i+1]); ok1 {
				sel, f, ok = free[i:i+1], f1, true
				break
			}
		}
	}
	for i := 0; !ok && i < len(free); i++ {
		sel = free[:i+1]
		f, ok = enough(sel)
	}
	if !ok || total < target+f+keep {
		if total+inflight >= target+f+keep && inflight > 0 {
			return nil, 0, errWait
		}
		return nil, 0, fmt.Errorf("%w: %d sats spendable, %d needed (%d to keep)", ErrInsufficientFunds, total, target+f, keep)
	}
	return sel, f, nil
}

// reserve marks the chosen proofs as spent by op.
func (w *Wallet) reserve(txn *kv.Txn, op *Op, sel []held) error {
	for _, h := range sel {
		h.rec.State, h.rec.Op = proofReserved, op.ID
		if err := kv.PutJSON(txn, w.key(kindProof, h.y), h.rec); err != nil {
			return err
		}
		op.Inputs = append(op.Inputs, h.rec.Proof)
	}
	op.Own = true
	return nil
}

// withFunds runs begin, waiting (within ctx, fundsWait at most) while the
// funds are held by operations in flight: a burst of payouts queues for
// the change of those before it instead of being refused.
func (w *Wallet) withFunds(ctx context.Context, op *Op, p plan) error {
	ctx, cancel := context.WithTimeout(ctx, fundsWait)
	defer cancel()
	for {
		w.mu.Lock()
		done := w.done
		w.mu.Unlock()
		err := w.begin(op, p)
		if !errors.Is(err, errWait) {
			return err
		}
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("%w: funds are held by operations in flight", ErrInsufficientFunds)
		}
	}
}

// fundsWait bounds how long a payout waits for operations in flight to
// give back the change it needs.
const fundsWait = 20 * time.Second

// takeOutputs reserves counters of keyset ks for amounts, appending the
// outputs to op.
func (w *Wallet) takeOutputs(txn *kv.Txn, op *Op, ks *Keyset, amounts []uint64, send bool) error {
	if len(amounts) == 0 {
		return nil
	}
	c, err := w.reserveCounters(txn, ks.ID, len(amounts))
	if err != nil {
		return err
	}
	for i, a := range amounts {
		op.Outputs = append(op.Outputs, Output{Keyset: ks.ID, Counter: c + uint32(i), Amount: a, Send: send})
	}
	return nil
}

// Operation is the newest operation filed under the caller's ref, as
// recorded: a caller that crashed in the middle of a call reads its
// outcome here once Recover has settled it.
func (w *Wallet) Operation(ref string) (Op, bool, error) { return w.opByRef(ref) }

// Payout is what the operation filed under a payout's reference did to
// the wallet, as its caller will book it once told: what Melt, MeltStatus,
// Send, SendLocked, Locked and Reclaim report of it (of its last attempt:
// a call that tried again with other proofs adds the earlier attempts'
// fees, which this does not see).
type Payout struct {
	Paid bool   // the payout left the wallet: a melt paid, a token or locked proofs made (and not taken back)
	Fee  uint64 // what it cost, paid or not, that its caller books
}

// PayoutIn reads, in txn, what the payout filed under ref (a melt's quote,
// a Send's or SendLocked's ref) has done so far, for a caller whose books
// lag the wallet's by a transaction and that reads both in one snapshot:
// the wallet settles an operation, then its caller books it. A payout
// still pending has cost only what preparing it did (a melt's split); one
// that failed, or whose call gave up on it (the wallet booked its cost),
// paid nothing.
func (w *Wallet) PayoutIn(txn *kv.Txn, ref string) (Payout, error) {
	op, found, err := w.opByRefIn(txn, ref)
	switch {
	case err != nil:
		return Payout{}, err
	case !found:
		// A melt that never began may have had its inputs prepared:
		// MeltStatus reports that swap's fee.
		sop, found, err := w.opByRefIn(txn, "split:"+ref)
		if err != nil || !found || sop.State != OpDone || sop.Abandoned {
			return Payout{}, err
		}
		return Payout{Fee: sop.Fee}, nil
	case op.Kind == kindMelt:
		return Payout{Paid: op.State == OpDone, Fee: op.Fee}, nil
	case op.State != OpDone || (op.Purpose != forSend && op.Purpose != forLock) || (op.SentAmount == 0 && op.Abandoned):
		return Payout{}, nil
	case op.SentAmount == 0: // no token was made: its outputs are the wallet's
		return Payout{Fee: op.cost()}, nil
	}
	back, found, err := w.opByRefIn(txn, "reclaim:"+ref)
	if err != nil || !found || back.State != OpDone {
		return Payout{Paid: true, Fee: op.Fee}, err
	}
	// The token came back (Reclaim): what making and taking it back cost.
	return Payout{Fee: op.Inputs.Amount() - op.Received - op.Lost - back.Received - back.Lost}, nil
}

// Receipt is what the Receive filed under a reference has brought in so
// far, as its caller books it: Settled once the mint's answer is known
// (or the operation never began or failed: nothing came in), Received
// what became the wallet's (what the mint owes, as Receive returns it).
type Receipt struct {
	Settled  bool
	Received uint64
	Fee      uint64
}

// ReceiptIn reads, in txn, what the Receive filed under ref has done: the
// wallet settles it (in its call, or through Recover after a lost answer
// or a crash), then its caller books it, in two transactions.
func (w *Wallet) ReceiptIn(txn *kv.Txn, ref string) (Receipt, error) {
	op, found, err := w.opByRefIn(txn, ref)
	switch {
	case err != nil:
		return Receipt{}, err
	case !found || op.Kind != kindSwap || op.Purpose != forReceive || op.State == OpFailed:
		return Receipt{Settled: true}, nil
	case op.State != OpDone:
		return Receipt{}, nil
	}
	return Receipt{Settled: true, Received: op.Received + op.Lost, Fee: op.Fee}, nil
}
