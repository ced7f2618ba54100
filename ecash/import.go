package ecash

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/kv"
)

// Legacy is another wallet's state for this wallet to take over (in
// outpost, the gonuts wallet the faucet used before).
type Legacy struct {
	Source     string            // where it was read from, for the record
	Mnemonic   string            // BIP39 words
	Seed       []byte            // their seed (empty passphrase)
	Counters   map[string]uint32 // keyset id → the next counter it would have used
	Proofs     cashu.Proofs      // spendable proofs of this mint
	Melting    []LegacyMelt      // proofs it put into melts
	Sent       cashu.Proofs      // proofs it handed out (tokens): not the wallet's
	MintQuotes []MintQuote       // quotes not yet issued
}

// LegacyMelt is a melt the old wallet started.
type LegacyMelt struct {
	Quote      string
	Amount     uint64
	FeeReserve uint64
	Proofs     cashu.Proofs
}

// counterMargin: the counters of imported keysets start this far beyond the
// old wallet's, which may lag behind what its mint signed (gonuts v0.4.2
// counted outputs only after the mint signed them). The skipped range is
// searched (NUT-09) for ecash signed but never recorded.
const counterMargin = 1000

// ImportSeed makes l's seed the wallet seed of db. It must run before the
// first Open on db; running it again with the same seed does nothing.
func ImportSeed(db *kv.DB, l Legacy, now int64) error {
	if len(l.Seed) < 16 {
		return errors.New("ecash: the imported seed is too short")
	}
	return db.Update(func(txn *kv.Txn) error {
		var rec seedRecord
		found, err := kv.GetJSON(txn, kv.Key(kv.PrefixWallet, kindSeed), &rec)
		if err != nil {
			return err
		}
		if found {
			if !bytes.Equal(rec.Seed, l.Seed) {
				return errors.New("ecash: the store has a wallet seed already; refusing to replace it")
			}
			return nil
		}
		return kv.PutJSON(txn, kv.Key(kv.PrefixWallet, kindSeed),
			seedRecord{Mnemonic: l.Mnemonic, Seed: l.Seed, CreatedAt: now, Source: l.Source})
	})
}

// Imported reports whether a wallet was imported at this mint before.
func (w *Wallet) Imported() (bool, error) {
	found := false
	err := w.db.View(func(txn *kv.Txn) error {
		_, err := txn.Get(w.key(kindMigrated))
		if err == nil {
			found = true
			return nil
		}
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		return err
	})
	return found, err
}

// Import takes over l (whose seed ImportSeed made the wallet's) in one
// transaction, without asking the mint: its spendable proofs, its counters
// plus a margin, its open melts (settled later like the wallet's own), the
// tokens it handed out (never spent by the wallet) and its open mint
// quotes. What only the mint can tell (which proofs are spent, what was
// signed beyond the old counters) Recover finds out. Importing twice does
// nothing.
func (w *Wallet) Import(l Legacy) error {
	now := w.now().Unix()
	err := w.db.Update(func(txn *kv.Txn) error {
		if _, err := txn.Get(w.key(kindMigrated)); err == nil {
			return nil
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		for id, c := range l.Counters {
			if err := w.setCounterAtLeast(txn, id, c+counterMargin); err != nil {
				return err
			}
		}
		for _, p := range l.Proofs {
			if err := w.putProof(txn, p, proofUnspent, "", now); err != nil {
				return err
			}
		}
		for _, m := range l.Melting {
			op := Op{ID: newID(), Kind: kindMelt, Purpose: forPayment, Mint: w.mint, Ref: m.Quote, State: OpPending,
				Created: now, Attempted: now, Inputs: m.Proofs, Own: true, Quote: m.Quote, Amount: m.Amount, FeeReserve: m.FeeReserve,
				Reason: "imported from " + l.Source}
			for _, p := range m.Proofs {
				if err := w.putProof(txn, p, proofReserved, op.ID, now); err != nil {
					return err
				}
			}
			if err := w.putOp(txn, op); err != nil {
				return err
			}
		}
		if len(l.Sent) > 0 {
			op := Op{ID: newID(), Kind: kindSwap, Purpose: forSend, Mint: w.mint, State: OpDone, Created: now, Settled: now,
				Sent: l.Sent, SentAmount: l.Sent.Amount(), Reason: "tokens handed out by " + l.Source}
			if err := w.putOp(txn, op); err != nil {
				return err
			}
		}
		for _, q := range l.MintQuotes {
			if err := kv.PutJSON(txn, w.key(kindMintQ, q.Quote), mintQuoteRecord{MintQuote: q, Created: now}); err != nil {
				return err
			}
		}
		return kv.PutJSON(txn, w.key(kindMigrated), migrationRecord{From: l.Source, At: now, Proofs: len(l.Proofs),
			Sats: l.Proofs.Amount(), Counters: l.Counters})
	})
	if err != nil {
		return err
	}
	return w.refreshBalance()
}

// checkImport finishes an import once the mint answers: it drops imported
// proofs the mint says are spent, and restores (NUT-09) what the mint
// signed in the counter ranges the old wallet had not counted yet.
func (w *Wallet) checkImport(ctx context.Context) error {
	var rec migrationRecord
	found := false
	if err := w.db.View(func(txn *kv.Txn) (err error) {
		found, err = kv.GetJSON(txn, w.key(kindMigrated), &rec)
		return err
	}); err != nil || !found || rec.Checked {
		return err
	}
	if err := w.ensureKeysets(ctx); err != nil {
		return err
	}
	a, err := w.Audit(ctx)
	if err != nil {
		return err
	}
	if err := w.dropSpent(a.spent); err != nil {
		return err
	}
	restored := 0
	var restoredSats uint64
	for id, from := range rec.Counters {
		ks := w.keyset(id)
		if ks == nil {
			continue // a keyset the mint no longer lists
		}
		proofs, err := w.scan(ctx, ks, from, from+counterMargin)
		if err != nil {
			return err
		}
		if err := w.db.Update(func(txn *kv.Txn) error {
			for _, p := range proofs {
				if err := w.putProof(txn, p, proofUnspent, "", w.now().Unix()); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		restored += len(proofs)
		restoredSats += proofs.Amount()
	}
	rec.Checked, rec.Restored, rec.SpentDropped = true, restored, len(a.spent)
	if err := w.db.Update(func(txn *kv.Txn) error { return kv.PutJSON(txn, w.key(kindMigrated), rec) }); err != nil {
		return err
	}
	w.log.Info("ecash: imported wallet checked with the mint", "from", rec.From, "proofs", rec.Proofs, "sats", rec.Sats,
		"spent_dropped", len(a.spent), "restored_proofs", restored, "restored_sats", restoredSats)
	return w.refreshBalance()
}

// scan restores the unspent proofs signed on keyset ks's outputs in
// counters [from, to), in batches of 100, until three batches in a row
// come back empty (NUT-13).
func (w *Wallet) scan(ctx context.Context, ks *Keyset, from, to uint32) (cashu.Proofs, error) {
	var found cashu.Proofs
	empty := 0
	for c := from; c < to && empty < 3; c += 100 {
		outs := make([]Output, 0, 100)
		for i := c; i < min(c+100, to); i++ {
			outs = append(outs, Output{Keyset: ks.ID, Counter: i, Amount: 1})
		}
		got, err := w.restored(ctx, outs)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			empty++
			continue
		}
		empty = 0
		ys := make([]string, 0, len(got))
		ps := make(cashu.Proofs, 0, len(got))
		for _, p := range got {
			y, err := proofY(p.Secret)
			if err != nil {
				return nil, err
			}
			ys, ps = append(ys, y), append(ps, p)
		}
		states, err := w.c.checkState(ctx, ys)
		if err != nil {
			return nil, err
		}
		for i, st := range states {
			if st == Unspent {
				found = append(found, ps[i])
			}
		}
	}
	return found, nil
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
