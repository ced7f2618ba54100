package ecash

import (
	"context"
	"fmt"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Mint quote states (NUT-04/23).
const (
	QuotePaid   = "PAID"
	QuoteIssued = "ISSUED"
)

// RequestMint asks the mint for an invoice of amount sats whose payment
// mints ecash into the wallet (CompleteMint). The quote is stored before
// it is returned.
func (w *Wallet) RequestMint(ctx context.Context, amount uint64) (MintQuote, error) {
	if err := w.ensureKeysets(ctx); err != nil {
		return MintQuote{}, err
	}
	q, err := w.c.mintQuote(ctx, amount)
	if err != nil {
		return MintQuote{}, err
	}
	if q.Amount == 0 {
		q.Amount = amount // older mints leave it out
	}
	if q.Amount != amount {
		return MintQuote{}, incompatible(w.mint, "/v1/mint/quote/bolt11", "asked for %d sats, quoted %d", amount, q.Amount)
	}
	rec := mintQuoteRecord{MintQuote: q, Created: w.now().Unix()}
	if err := w.db.Update(func(txn *kv.Txn) error {
		return kv.PutJSON(txn, w.key(kindMintQ, q.Quote), rec)
	}); err != nil {
		return MintQuote{}, err
	}
	return q, nil
}

// MintState is what became of a mint quote.
type MintState string

const (
	MintUnpaid MintState = "unpaid" // not paid (yet)
	MintIssued MintState = "issued" // paid, and its ecash is in the wallet
	MintLost   MintState = "lost"   // the mint issued it, but not to this wallet's outputs
)

// CompleteMint mints the quote's ecash once its invoice is paid. It may be
// called again: an issued quote reports MintIssued.
func (w *Wallet) CompleteMint(ctx context.Context, quote string) (MintState, error) {
	// One at a time: a second call for a quote waits for the first's outcome.
	w.minting.Lock()
	defer w.minting.Unlock()
	rec, err := w.mintQuote(quote)
	if err != nil {
		return "", err
	}
	switch rec.State {
	case QuoteIssued:
		return MintIssued, nil
	case string(MintLost):
		return MintLost, nil
	}
	if rec.Op != "" {
		var op Op
		if err := w.db.View(func(txn *kv.Txn) (err error) { op, _, err = w.getOp(txn, rec.Op); return }); err != nil {
			return "", err
		}
		if op.State == OpPending {
			if !w.claim(&op) {
				return MintUnpaid, nil // this process is minting it right now
			}
			defer w.release(&op)
			return w.settleMint(ctx, &op, true)
		}
	}
	q, err := w.c.mintQuoteState(ctx, quote)
	if err != nil {
		return "", err
	}
	switch q.State {
	case QuotePaid:
	case QuoteIssued:
		w.setQuoteState(quote, string(MintLost), "")
		return MintLost, nil
	default:
		return MintUnpaid, nil
	}
	if err := w.ensureKeysets(ctx); err != nil {
		return "", err
	}
	ks, err := w.activeKeyset()
	if err != nil {
		return "", err
	}
	amounts, ok := ks.split(rec.Amount)
	if !ok {
		return "", fmt.Errorf("ecash: keyset %s cannot represent %d", ks.ID, rec.Amount)
	}
	op := Op{Kind: kindMint, Purpose: forDeposit, Quote: quote, Amount: rec.Amount}
	err = w.begin(&op, func(txn *kv.Txn, op *Op) error {
		var cur mintQuoteRecord
		if _, err := kv.GetJSON(txn, w.key(kindMintQ, quote), &cur); err != nil {
			return err
		}
		if cur.Op != "" && cur.Op != rec.Op {
			return fmt.Errorf("ecash: mint quote %s is being minted already", quote)
		}
		cur.Op = op.ID
		if err := kv.PutJSON(txn, w.key(kindMintQ, quote), cur); err != nil {
			return err
		}
		return w.takeOutputs(txn, op, ks, amounts, false)
	})
	if err != nil {
		return "", err
	}
	defer w.release(&op)
	return w.sendMint(ctx, &op)
}

// Minted tells, in txn, whether quote's ecash is in the wallet: its mint
// operation is done. The proofs and the operation's state are written in
// one transaction; the quote's own record is marked issued only after.
func (w *Wallet) Minted(txn *kv.Txn, quote string) (bool, error) {
	var rec mintQuoteRecord
	if found, err := kv.GetJSON(txn, w.key(kindMintQ, quote), &rec); err != nil || !found || rec.Op == "" {
		return false, err
	}
	op, found, err := w.getOp(txn, rec.Op)
	return found && op.State == OpDone, err
}

func (w *Wallet) mintQuote(quote string) (mintQuoteRecord, error) {
	var rec mintQuoteRecord
	found := false
	err := w.db.View(func(txn *kv.Txn) (err error) {
		found, err = kv.GetJSON(txn, w.key(kindMintQ, quote), &rec)
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: mint quote %s", ErrUnknownQuote, quote)
	}
	return rec, err
}

// sendMint sends op's mint request and records the outcome; when the
// answer is lost, the mint is asked what it did.
func (w *Wallet) sendMint(ctx context.Context, op *Op) (MintState, error) {
	_, msgs, err := w.sec.blind(op.Outputs)
	if err != nil {
		return "", err
	}
	sigs, err := w.c.mintTokens(ctx, op.Quote, msgs)
	if err == nil {
		proofs, bad, perr := w.verify(op.Outputs, sigs, true)
		if perr == nil {
			op.Lost = w.repair(ctx, op, sigs, proofs, bad)
			return w.issued(op, proofs)
		}
		w.log.Error("ecash: the mint's answer does not fit the request", "op", op.ID, "err", perr)
		err = perr
	}
	w.log.Debug("ecash: mint request failed; asking the mint what it did", "op", op.ID, "err", err)
	st, serr := w.settleMint(ctx, op, false)
	if serr == nil && st == "" && keysetsStale(err) {
		return w.rotated(ctx, op, err)
	}
	if serr != nil || st == "" {
		return "", err
	}
	return st, nil
}

// rotated gives up a mint request whose outputs are of a keyset the mint
// no longer signs with (it rotated since they were made) and none of which
// it signed: the quote is still paid, and the next CompleteMint asks with
// outputs of the keyset the mint has active now. Sent again as they are,
// they would be refused until the quote expired.
func (w *Wallet) rotated(ctx context.Context, op *Op, cause error) (MintState, error) {
	op.State, op.Reason = OpFailed, "the mint's keyset changed: "+errText(cause)
	if err := w.commit(op, outcome{}); err != nil {
		return "", err
	}
	w.log.Info("ecash: the mint rotated its keyset; minting again with its active one", "op", op.ID, "quote", op.Quote)
	if err := w.Refresh(ctx); err != nil {
		return "", err
	}
	return "", cause
}

func (w *Wallet) issued(op *Op, proofs []cashu.Proof) (MintState, error) {
	op.State = OpDone
	var keep []cashu.Proof
	for _, p := range proofs {
		if p.C != "" { // given up (op.Lost)
			keep = append(keep, p)
			op.Received += p.Amount
		}
	}
	if err := w.commit(op, outcome{keep: keep}); err != nil {
		return "", err
	}
	w.setQuoteState(op.Quote, QuoteIssued, op.ID)
	return MintIssued, nil
}

// settleMint finds out what became of a mint operation: the outputs the
// mint signed (NUT-09), else its quote's state. With resend, a paid quote
// none of whose outputs are signed is asked for again with the same
// outputs; without, op stays pending ("" and no error).
func (w *Wallet) settleMint(ctx context.Context, op *Op, resend bool) (MintState, error) {
	got, err := w.restored(ctx, op.Outputs)
	if err != nil {
		return "", err
	}
	if len(got) > 0 {
		proofs := make([]cashu.Proof, 0, len(got))
		for i, o := range op.Outputs {
			if p, ok := got[i]; ok {
				proofs = append(proofs, p)
			} else {
				op.Lost += o.Amount // the quote is issued: these were never signed
			}
		}
		return w.issued(op, proofs)
	}
	q, err := w.c.mintQuoteState(ctx, op.Quote)
	if err != nil {
		return "", err
	}
	switch q.State {
	case QuotePaid:
		if !resend {
			return "", nil
		}
		return w.sendMint(ctx, op)
	case QuoteIssued:
		op.State, op.Reason = OpFailed, "the mint issued the quote to other outputs"
		if err := w.commit(op, outcome{}); err != nil {
			return "", err
		}
		w.setQuoteState(op.Quote, string(MintLost), op.ID)
		return MintLost, nil
	}
	// Unpaid: nothing was minted; the quote may be minted later.
	op.State, op.Reason = OpFailed, "the quote is not paid"
	if err := w.commit(op, outcome{}); err != nil {
		return "", err
	}
	w.setQuoteState(op.Quote, q.State, "")
	return MintUnpaid, nil
}

// setQuoteState records a mint quote's state and operation.
func (w *Wallet) setQuoteState(quote, state, op string) {
	err := w.db.Update(func(txn *kv.Txn) error {
		var rec mintQuoteRecord
		found, err := kv.GetJSON(txn, w.key(kindMintQ, quote), &rec)
		if err != nil || !found {
			return err
		}
		rec.State, rec.Op = state, op
		return kv.PutJSON(txn, w.key(kindMintQ, quote), rec)
	})
	if err != nil {
		w.log.Error("ecash: recording a mint quote's state", "quote", quote, "err", err)
	}
}
