package audit

import (
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// MintHolding is what the audit wallet holds at one mint.
type MintHolding struct {
	MintURL         string `json:"mint_url"`
	HeldSats        uint64 `json:"held_sats"`        // spendable proofs
	QuarantinedSats uint64 `json:"quarantined_sats"` // of lost: proofs the mint refused (held again if it takes them)
	InFlightSats    uint64 `json:"in_flight_sats"`   // proofs operations are spending, and sats paid to it not minted yet
	LostSats        uint64 `json:"lost_to_mint_sats"`
	SurplusSats     uint64 `json:"mint_surplus_sats"`
	InternalFeeSats uint64 `json:"internal_fee_sats"` // the wallet's housekeeping (keyset rotation, retries)
	// Withdrawn: the mint gets no more sats (two failed audits in a row,
	// or Flag); what it holds is moved out by the rounds it pays.
	Withdrawn bool  `json:"withdrawn"`
	Flag      *Flag `json:"flag"`
}

// Books are the audit wallet's books:
// deposited_sats + mint_surplus_sats = held_sats + fees_paid_sats + in_flight_sats + lost_to_mint_sats.
type Books struct {
	DepositedSats   uint64 `json:"deposited_sats"`
	MintSurplusSats uint64 `json:"mint_surplus_sats"`
	HeldSats        uint64 `json:"held_sats"`
	FeesPaidSats    uint64 `json:"fees_paid_sats"`
	InFlightSats    uint64 `json:"in_flight_sats"`
	LostToMintSats  uint64 `json:"lost_to_mint_sats"`
	Balanced        bool   `json:"balanced"`
}

// Holdings are the audit wallet's holdings per mint and its books.
type Holdings struct {
	Mints    []MintHolding `json:"mints"`
	Books    Books         `json:"books"`
	Deposits []Deposit     `json:"open_deposits"`
}

// holding reads the audit wallet at mint.
func (a *Auditor) holding(mint string) (MintHolding, error) {
	w, err := a.wallet(mint)
	if err != nil {
		return MintHolding{}, err
	}
	h, t, err := w.Books()
	if err != nil {
		return MintHolding{}, err
	}
	// Proofs the mint refuses are what it kept, as long as it refuses them.
	m := MintHolding{MintURL: mint, HeldSats: h.Unspent, QuarantinedSats: h.Quarantined, InFlightSats: h.Reserved,
		LostSats: t.LostSats + h.Quarantined, SurplusSats: t.SurplusSats, InternalFeeSats: t.InternalFeeSats}
	err = a.db.View(func(txn *kv.Txn) error {
		return a.eachOpenRound(txn, func(r Round) {
			if r.Payee == mint && r.paidNotMinted() {
				m.InFlightSats += r.Amount
			}
		})
	})
	return m, err
}

// Holdings reads every mint's holdings and the books.
func (a *Auditor) Holdings() (Holdings, error) {
	mints, err := a.Mints()
	if err != nil {
		return Holdings{}, err
	}
	out := Holdings{Mints: []MintHolding{}}
	b := &out.Books
	for _, mint := range mints {
		m, err := a.holding(mint)
		if err != nil {
			return Holdings{}, err
		}
		if f, err := a.flag(mint); err != nil {
			return Holdings{}, err
		} else if !f.At.IsZero() {
			m.Flag = &f
		}
		m.Withdrawn = a.withdrawn(mint)
		out.Mints = append(out.Mints, m)
		b.HeldSats += m.HeldSats
		b.InFlightSats += m.InFlightSats
		b.LostToMintSats += m.LostSats
		b.MintSurplusSats += m.SurplusSats
		b.FeesPaidSats += m.InternalFeeSats
	}
	var l ledger
	if err := a.db.View(func(txn *kv.Txn) error {
		_, err := kv.GetJSON(txn, kv.Key(kv.PrefixAudit, kindLedger), &l)
		return err
	}); err != nil {
		return Holdings{}, err
	}
	b.DepositedSats = l.DepositedSats
	b.FeesPaidSats += l.FeesPaidSats
	b.LostToMintSats += l.LostSats - min(l.LostSats, l.RecoveredSats)
	b.MintSurplusSats += l.RecoveredSats - min(l.LostSats, l.RecoveredSats)
	b.Balanced = b.DepositedSats+b.MintSurplusSats == b.HeldSats+b.FeesPaidSats+b.InFlightSats+b.LostToMintSats
	if out.Deposits, err = a.deposits(true); err != nil {
		return Holdings{}, err
	}
	if out.Deposits == nil {
		out.Deposits = []Deposit{}
	}
	return out, nil
}
