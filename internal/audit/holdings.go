package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Flag is a mint caught cheating the audit wallet: ecash it issued
// reported spent although the wallet never spent it (NUT-07), valid proofs
// refused (quarantined by the wallet), or a melt that took more than the
// fee reserve it quoted.
type Flag struct {
	MintURL string    `json:"mint_url"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	Sats    uint64    `json:"sats"`
}

func flagKey(mint string) []byte { return kv.Key(kv.PrefixAudit, kindFlag, []byte(mint)) }

// flag reads mint's flag; the zero Flag when it has none.
func (a *Auditor) flag(mint string) (Flag, error) {
	var f Flag
	err := a.db.View(func(txn *kv.Txn) error {
		_, err := kv.GetJSON(txn, flagKey(mint), &f)
		return err
	})
	return f, err
}

// CheckHoldings asks each mint for the state of every proof the wallet
// holds there (NUT-07): a mint that says some are spent (the wallet spent
// none of them), or whose proofs the wallet had to quarantine, is flagged
// at once, and so gets no more sats. Proofs it says are spent are
// quarantined, so the books count them lost to it. A mint that cannot be asked is left
// to the rounds. It returns the first error.
func (a *Auditor) CheckHoldings(ctx context.Context) error {
	mints, err := a.Mints()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mints {
		errs = append(errs, a.checkHolding(ctx, m))
	}
	return errors.Join(errs...)
}

func (a *Auditor) checkHolding(ctx context.Context, mint string) error {
	w, err := a.wallet(mint)
	if err != nil {
		return err
	}
	cctx, cancel := a.ctx(ctx)
	defer cancel()
	au, err := w.QuarantineSpent(cctx) // what it says is spent it kept: lost to it, unless it takes them after all
	if err != nil {
		return err
	}
	switch {
	case au.UnspentSats < au.HeldSats:
		return a.putFlag(mint, fmt.Sprintf("the mint says %d of the %d sats of ecash it issued to the audit wallet are not unspent", au.HeldSats-au.UnspentSats, au.HeldSats), au.HeldSats-au.UnspentSats)
	case au.QuarantinedSats > 0:
		return a.putFlag(mint, fmt.Sprintf("the mint refused %d sats of the audit wallet's proofs", au.QuarantinedSats), au.QuarantinedSats)
	}
	return nil
}

// putFlag flags mint: it gets no more sats.
func (a *Auditor) putFlag(mint, reason string, sats uint64) error {
	f := Flag{MintURL: mint, At: a.now().UTC(), Reason: reason, Sats: sats}
	a.log.Warn("audit: a mint is flagged", "mint", mint, "reason", f.Reason)
	return a.db.Record(func(txn *kv.Txn) error { return kv.PutJSON(txn, flagKey(mint), f) })
}

// withdrawn: the mint gets no more sats. It failed its two newest audits,
// it was flagged, or its trust score is under --audit-min-trust; what it
// holds is moved out by the rounds it pays.
func (a *Auditor) withdrawn(mint string) bool {
	if f, err := a.flag(mint); err != nil || !f.At.IsZero() {
		return true
	}
	if a.cfg.Trust != nil {
		if score, ok := a.cfg.Trust(mint); ok && score < a.cfg.MinTrust {
			return true
		}
	}
	s, err := a.Summary(mint)
	return err != nil || s.FailedInARow >= 2
}
