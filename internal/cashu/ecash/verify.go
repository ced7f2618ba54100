package ecash

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut12"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// A mint's answer is trusted one signature at a time: each is checked on
// its own (keyset, key of its amount, DLEQ proof), so one bad signature
// costs at most its own amount. Outputs are deterministic (NUT-13), so a
// signature that does not verify is asked for again through NUT-09
// restore before it is given up as lost to the mint.

// verify turns signatures on outs (the first len(sigs), in order) into
// proofs. bad holds, by index, the signatures that do not check out and
// why; their proofs are left zero. err is for an answer that cannot be
// matched to outs at all.
func (w *Wallet) verify(outs []Output, sigs cashu.BlindedSignatures, exact bool) (proofs []cashu.Proof, bad map[int]error, err error) {
	if len(sigs) > len(outs) || (exact && len(sigs) != len(outs)) {
		// Status 200: the mint answered, so what it did can be asked at once.
		return nil, nil, &MintError{Problem: Faulty, Mint: w.mint, Status: 200, Detail: fmt.Sprintf("%d signatures for %d outputs", len(sigs), len(outs))}
	}
	bs, _, err := w.sec.blind(outs[:len(sigs)])
	if err != nil {
		return nil, nil, err
	}
	dleq := w.requireDLEQ()
	proofs = make([]cashu.Proof, len(sigs))
	for i, sig := range sigs {
		if exact && sig.Amount != outs[i].Amount {
			bad = addBad(bad, i, fmt.Errorf("a signature is for %d where %d was asked for", sig.Amount, outs[i].Amount))
			continue
		}
		p, err := unblind(bs[i], sig, w.keyset(outs[i].Keyset), dleq)
		if err != nil {
			bad = addBad(bad, i, err)
			continue
		}
		proofs[i] = p
	}
	return proofs, bad, nil
}

func addBad(bad map[int]error, i int, err error) map[int]error {
	if bad == nil {
		bad = map[int]error{}
	}
	bad[i] = err
	return bad
}

// repair asks the mint to restore (NUT-09) the outputs whose signatures
// did not verify and fills in those that now do. It returns the sats of
// outputs still bad: the amount of the output (or, for blank outputs of a
// fee return, of the signature the mint sent). Those are booked as lost
// to the mint, and kept in op.owed: the mint has signed them (it spent the
// inputs), so Recover asks it to restore them again later, and a
// signature that verifies then brings them back.
func (w *Wallet) repair(ctx context.Context, op *Op, sigs cashu.BlindedSignatures, proofs []cashu.Proof, bad map[int]error) (lost uint64) {
	if len(bad) == 0 {
		return 0
	}
	idx := make([]int, 0, len(bad))
	outs := make([]Output, 0, len(bad))
	for i := range bad {
		idx = append(idx, i)
		outs = append(outs, op.Outputs[i])
	}
	got, err := w.restored(ctx, outs)
	if err != nil {
		w.log.Warn("ecash: signatures that did not verify could not be restored", "op", op.ID, "err", err)
	}
	for j, i := range idx {
		if p, ok := got[j]; ok && (p.Amount == op.Outputs[i].Amount || op.Outputs[i].Amount == 1) {
			proofs[i] = p
			continue
		}
		amount := op.Outputs[i].Amount
		if amount == 1 && i < len(sigs) && w.keyset(op.Outputs[i].Keyset).pubKey(sigs[i].Amount) != nil {
			amount = sigs[i].Amount // a blank output: the mint said what it was worth
		}
		lost += amount
		if op.Outputs[i].Lock == "" { // a locked output would be its receiver's, never the wallet's
			op.owed = append(op.owed, owedRecord{Output: op.Outputs[i], Sats: amount, Op: op.ID, Why: bad[i].Error()})
		}
		w.log.Error("ecash: a signature of the mint does not verify and could not be restored; its sats are booked lost to the mint until a restore brings them back",
			"op", op.ID, "output", i, "sats", amount, "why", bad[i])
	}
	return lost
}

// reclaimOwed asks the mint again to restore the outputs whose signatures
// never verified; each that verifies now is the wallet's again, and no
// longer lost to the mint.
func (w *Wallet) reclaimOwed(ctx context.Context) error {
	var recs []owedRecord
	var keys [][]byte
	err := w.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, w.key(kindOwed), nil, false, func(k []byte, r owedRecord) (bool, error) {
			recs, keys = append(recs, r), append(keys, append([]byte(nil), k...))
			return true, nil
		})
	})
	if err != nil || len(recs) == 0 {
		return err
	}
	outs := make([]Output, len(recs))
	for i, r := range recs {
		outs[i] = r.Output
	}
	got, err := w.restored(ctx, outs)
	if len(got) == 0 {
		return err
	}
	var back uint64
	err = w.db.Record(func(txn *kv.Txn) error {
		back = 0
		var t Totals
		now := w.now().Unix()
		for i, p := range got {
			if _, err := txn.Get(keys[i]); err != nil {
				continue // reclaimed meanwhile
			}
			if err := w.putProof(txn, p, proofUnspent, "", now); err != nil {
				return err
			}
			if err := txn.Delete(keys[i]); err != nil {
				return err
			}
			back += p.Amount
			t.LostSats += min(p.Amount, recs[i].Sats)
			t.SurplusSats += p.Amount - min(p.Amount, recs[i].Sats) // a blank output worth more than its signature said
		}
		return w.subTotals(txn, t)
	})
	if err != nil {
		return err
	}
	w.log.Info("ecash: the mint restored signatures that had not verified; their sats are the wallet's again", "outputs", len(got), "sats", back)
	return w.refreshBalance()
}

// restored asks the mint which of outs it signed (NUT-09) and returns the
// proofs of those whose signatures verify, by index into outs.
func (w *Wallet) restored(ctx context.Context, outs []Output) (map[int]cashu.Proof, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	bs, msgs, err := w.sec.blind(outs)
	if err != nil {
		return nil, err
	}
	byB := make(map[string]int, len(msgs))
	for i, m := range msgs {
		byB[m.B_] = i
	}
	dleq := w.requireDLEQ()
	got := map[int]cashu.Proof{}
	for start := 0; start < len(msgs); start += 100 {
		batch := msgs[start:min(len(msgs), start+100)]
		ro, rs, err := w.c.restore(ctx, batch)
		if err != nil {
			return got, err
		}
		for j, m := range ro {
			i, ok := byB[m.B_]
			if !ok {
				return got, &MintError{Problem: Faulty, Mint: w.mint, Path: "/v1/restore", Detail: "the mint restored an output it was not asked about"}
			}
			p, err := unblind(bs[i], rs[j], w.keyset(rs[j].Id), dleq)
			if err != nil {
				w.log.Error("ecash: a restored signature does not verify; ignored", "err", err)
				continue
			}
			got[i] = p
		}
	}
	return got, nil
}

// requireDLEQ reports whether every signature must carry a DLEQ proof:
// unless the mint does not advertise NUT-12 and the operator allowed that.
func (w *Wallet) requireDLEQ() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.cfg.AllowNoDLEQ || w.info.supports(12) || w.loadedAt.IsZero()
}

// WithoutDLEQ reports whether the wallet takes the mint's signatures
// without DLEQ proofs (the mint does not advertise NUT-12 and the
// operator allowed it): they cannot be checked, so a bad one is found out
// only when it is spent.
func (w *Wallet) WithoutDLEQ() bool { return !w.requireDLEQ() }

// checkOwn checks a proof the wallet holds against its DLEQ proof (NUT-12,
// as a receiver does): false means the mint never signed it as it stands.
func (w *Wallet) checkOwn(p cashu.Proof) bool {
	ks := w.keyset(p.Id)
	if ks == nil {
		return false
	}
	K := ks.pubKey(p.Amount)
	if K == nil {
		return false
	}
	if p.DLEQ == nil {
		return true // taken without one (see WithoutDLEQ): nothing to check
	}
	return nut12.VerifyProofDLEQ(p, K)
}

// Refusals of the mint that say something about the proofs or keysets of
// a request (NUT-00 error codes; Nutshell and gonuts differ in places).
const (
	codeProofsInvalid  = 10001 // Nutshell: "proofs could not be verified"
	codeProofInvalid   = 10003 // gonuts: "invalid proof"
	codeKeysetUnknown  = 12001
	codeKeysetInactive = 12002 // Nutshell says "keyset id inactive." with 11000
)

// proofsRefused reports whether err is the mint refusing the inputs as they
// are (it cannot verify them, or does not know their keyset).
func proofsRefused(err error) bool {
	me := AsMintError(err)
	if me == nil || me.Problem != Refused {
		return false
	}
	d := strings.ToLower(me.Detail)
	return me.Code == codeProofsInvalid || me.Code == codeProofInvalid ||
		strings.Contains(d, "could not be verified") || strings.Contains(d, "invalid proof")
}

// keysetsStale reports whether err is the mint saying a keyset of the
// request is inactive or unknown: its keysets changed since the wallet
// last asked.
func keysetsStale(err error) bool {
	me := AsMintError(err)
	if me == nil || me.Problem != Refused {
		return false
	}
	d := strings.ToLower(me.Detail)
	return me.Code == codeKeysetInactive || me.Code == codeKeysetUnknown ||
		(strings.Contains(d, "keyset") && (strings.Contains(d, "inactive") || strings.Contains(d, "unknown") || strings.Contains(d, "not found")))
}

// errQuarantined: the mint refused some of the inputs; they were taken out
// of the spendable set, so trying again uses others.
var errQuarantined = errors.New("ecash: the mint refused some proofs; they are quarantined")

// retryable reports whether an operation that failed with err may be
// tried again at once with other proofs or fresh keysets; it refreshes the
// keysets when they are stale.
func (w *Wallet) retryable(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, errQuarantined), errors.Is(err, ErrSpent):
		return true
	case keysetsStale(err):
		w.log.Info("ecash: the mint's keysets changed; asking for them again", "err", err)
		return w.Refresh(ctx) == nil
	}
	return false
}
