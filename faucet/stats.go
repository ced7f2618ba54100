package faucet

import (
	"context"
	"sort"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Stats are the faucet's figures, from the wallet and the claim ledger.
type Stats struct {
	BalanceSats        *int64 `json:"balance_sats"`
	TotalPaidSats      int64  `json:"total_paid_sats"`
	TotalFeeSats       int64  `json:"total_fee_sats"`
	TotalClaims        int64  `json:"total_claims"`
	Claims24h          int64  `json:"claims_24h"`
	Paid24hSats        int64  `json:"paid_24h_sats"`
	PendingClaims      int64  `json:"pending_claims"`
	DailyBudgetSats    *int64 `json:"daily_budget_sats"`
	DailySpentSats     int64  `json:"daily_spent_sats"`
	TotalDepositedSats int64  `json:"total_deposited_sats"`
	DepositsCount      int64  `json:"deposits_count"`
	// The rest of the books: total_deposited_sats + mint_surplus_sats =
	// balance_sats + total_paid_sats + total_fee_sats + in_flight_sats +
	// quarantined_sats + lost_to_mint_sats.
	InFlightSats    int64 `json:"in_flight_sats"`
	QuarantinedSats int64 `json:"quarantined_sats"`
	LostToMintSats  int64 `json:"lost_to_mint_sats"`
	MintSurplusSats int64 `json:"mint_surplus_sats"`
	UpdatedAt       int64 `json:"updated_at"`
}

// Stats reads the ledger. Claims of the last 24 hours are those confirmed
// in them that were paid; the day's spending includes what unsettled
// claims hold.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	now := s.now()
	st := Stats{UpdatedAt: now.Unix()}
	if s.cfg.DailyBudgetSats > 0 {
		b := s.cfg.DailyBudgetSats
		st.DailyBudgetSats = &b
	}
	_, reachable := s.tr.Balance()
	// The wallet's books and the faucet's are read in one snapshot, so that
	// they balance at every instant.
	err := s.db.View(func(txn *kv.Txn) error {
		l, err := s.tr.LedgerIn(txn)
		if err != nil {
			return err
		}
		if reachable {
			st.BalanceSats = &l.BalanceSats
		}
		st.InFlightSats, st.QuarantinedSats, st.LostToMintSats, st.MintSurplusSats = l.InFlightSats, l.QuarantinedSats, l.LostSats, l.SurplusSats
		var t totals
		if _, err := kv.GetJSON(txn, key(kindTotals), &t); err != nil {
			return err
		}
		// The wallet's housekeeping (moving proofs off retired keysets,
		// retrying quarantined ones) is paid for by no claim.
		st.TotalPaidSats, st.TotalFeeSats, st.TotalClaims = t.PaidSats, t.FeeSats+l.InternalFeeSats, t.Claims
		st.TotalDepositedSats, st.DepositsCount = t.DepositedSats, t.Deposits
		if err := s.mintedNotBooked(txn, &st); err != nil {
			return err
		}
		var b budget
		if _, err := kv.GetJSON(txn, key(kindBudget, day(now)), &b); err != nil {
			return err
		}
		st.DailySpentSats = b.SpentSats
		paid, err := s.paidNotBooked(txn, &st, day(now))
		if err != nil {
			return err
		}
		prefix := key(kindClaimTime)
		since := append(append([]byte{}, prefix...), kv.U64(uint64(now.Add(-24*time.Hour).Unix()))...)
		it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(since); it.Valid(); it.Next() {
			id, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			c, found, err := getClaim(txn, string(id))
			if err != nil {
				return err
			}
			if found && (c.State == ClaimPaid || paid[c.ID]) {
				st.Claims24h++
				st.Paid24hSats += c.AmountSats
			}
			// Unsettled until the faucet books it, even once paid: a token
			// a stopped process made is taken back on the restart.
			if found && (c.State == ClaimPending || c.State == ClaimPaying) {
				st.PendingClaims++
			}
		}
		return nil
	})
	return st, err
}

// Eligibility says whether the user could claim now, and if not why and when.
type Eligibility struct {
	Eligible    bool     `json:"eligible"`
	Reasons     []string `json:"reasons"`
	NextClaimAt *int64   `json:"next_claim_at"`
}

// Eligibility checks everything a quote would, without making one.
func (s *Service) Eligibility(ctx context.Context, sess Session, u User, ip string) (Eligibility, error) {
	now := s.now()
	e := Eligibility{Reasons: []string{}}
	var next time.Time
	later := func(t time.Time) {
		if t.After(next) {
			next = t
		}
	}
	if !s.cfg.Enabled {
		e.Reasons = append(e.Reasons, "faucet_disabled")
	}
	if sess.Method == LoginNPub && u.LUD16() == "" {
		e.Reasons = append(e.Reasons, "no_lightning_address")
	}
	if at, unknown := s.eligibleAt(u); unknown || !at.IsZero() {
		e.Reasons = append(e.Reasons, "account_too_new")
		later(at)
	}
	e.Reasons = append(e.Reasons, s.trustReasons(u.PubKey)...)
	var l limits
	if err := s.db.View(func(txn *kv.Txn) (err error) {
		l, err = s.readLimits(txn, sess.PubKey, s.ipHash(ip), now)
		return err
	}); err != nil {
		return Eligibility{}, err
	}
	if until := time.Unix(l.cooldown.Until, 0); now.Before(until) {
		e.Reasons = append(e.Reasons, "cooldown")
		later(until)
	}
	if s.cfg.IPLimit > 0 && len(l.ip.Entries) >= s.cfg.IPLimit {
		e.Reasons = append(e.Reasons, "ip_limit")
		later(time.Unix(l.ip.Entries[0].At, 0).Add(s.cfg.IPWindow))
	}
	if s.cfg.SitewideLimit > 0 && len(l.sitewide.Entries) >= s.cfg.SitewideLimit {
		e.Reasons = append(e.Reasons, "sitewide_limit")
		later(time.Unix(l.sitewide.Entries[0].At, 0).Add(s.cfg.SitewideWindow))
	}
	amount := s.cfg.minAmount()
	if s.cfg.DailyBudgetSats > 0 && l.budget.SpentSats+amount+s.cfg.MaxFeeSats > s.cfg.DailyBudgetSats {
		e.Reasons = append(e.Reasons, "budget_exhausted")
		later(nextDay(now))
	}
	if err := s.checkBalance(amount); err != nil {
		if e2 := outpost.AsError(err); e2 != nil && (e2.Code == "mint_unavailable" || e2.Code == "mint_incompatible") {
			e.Reasons = append(e.Reasons, e2.Code)
		} else {
			e.Reasons = append(e.Reasons, "insufficient_funds")
		}
	}
	sort.Strings(e.Reasons)
	e.Eligible = len(e.Reasons) == 0
	if !next.IsZero() {
		n := next.Unix()
		e.NextClaimAt = &n
	}
	return e, nil
}

// HealthChecks are what the faucet's /health is judged on: the store, and
// the mint as the wallet last saw it (the background job asks every 30 s).
type HealthChecks struct {
	Store      string `json:"store"`      // ok or error
	Mint       string `json:"mint"`       // the treasury's state of the mint
	Signatures string `json:"signatures"` // verified (NUT-12) or unverified
	// QuarantinedSats are proofs the mint refused, out of the spendable
	// set (see /stats).
	QuarantinedSats int64 `json:"quarantined_sats"`
}

// Health makes no outbound calls. A mint that cannot be reached makes the
// faucet degraded (it may come back); one that does not work with the
// wallet, or a store that fails, makes it down.
func (s *Service) Health(ctx context.Context) outpost.Health[HealthChecks] {
	st := s.tr.Status()
	h := outpost.NewHealth(Version, HealthChecks{Store: "ok", Mint: st.State, Signatures: "verified", QuarantinedSats: s.tr.Quarantined()})
	if s.db.Check(ctx) != nil {
		h.Checks.Store = "error"
		h.Fail(outpost.HealthDown, "the database cannot be read")
	}
	switch st.State {
	case treasury.StateUnreachable:
		h.Fail(outpost.HealthDegraded, "the mint cannot be reached: "+st.Reason)
	case treasury.StateIncompatible:
		h.Fail(outpost.HealthDown, "the mint does not work with the faucet's wallet: "+st.Reason)
	case treasury.StateFaulty:
		h.Fail(outpost.HealthDegraded, "the mint answered with signatures that do not verify (none were kept): "+st.Reason)
	}
	if s.tr.WithoutDLEQ() {
		h.Checks.Signatures = "unverified"
		h.Fail(outpost.HealthDegraded, "the mint does not advertise DLEQ proofs (NUT-12); its signatures are taken unchecked (faucet-mint-without-dleq)")
	}
	return h
}

// mintedNotBooked counts the deposits whose ecash the wallet holds already
// but which are not closed yet: the wallet mints a paid quote, or takes a
// token in, then the faucet books it, in two transactions.
func (s *Service) mintedNotBooked(txn *kv.Txn, st *Stats) error {
	open, err := openDepositsIn(txn)
	if err != nil {
		return err
	}
	for _, d := range open {
		amount, err := s.inWallet(txn, d)
		if err != nil {
			return err
		}
		if amount > 0 {
			st.TotalDepositedSats += amount
			st.DepositsCount++
		}
	}
	return nil
}

// inWallet is what open deposit d has brought into the wallet so far:
// a token's what the swap took in, an invoice's its amount once minted.
func (s *Service) inWallet(txn *kv.Txn, d Deposit) (int64, error) {
	if d.Kind == DepositEcash {
		r, err := s.tr.ReceiptIn(txn, d.ID)
		return r.AmountSats, err
	}
	if minted, err := s.tr.Minted(txn, d.MintQuoteID); err != nil || !minted {
		return 0, err
	}
	return d.AmountSats, nil
}

// paidNotBooked counts the unsettled claims whose payout the wallet has
// settled already as the faucet will book them: the wallet settles a
// payout (a melt, a token or locked proofs made, a token taken back), then
// the faucet books the claim (settle, failCost), in two transactions.
// A claim paid is counted paid, with its fee, in the totals and the day's
// budget (as settle books it), and is returned for the day's figures; one
// whose payout paid nothing stays unsettled, but what its attempt cost
// counts as fees.
func (s *Service) paidNotBooked(txn *kv.Txn, st *Stats, today string) (map[string]bool, error) {
	paid := map[string]bool{}
	err := kv.EachKey(txn, key(kindUnsettled), func(id []byte) (bool, error) {
		c, found, err := getClaim(txn, string(id))
		if err != nil || !found || (c.State != ClaimPaying && c.State != ClaimPending) {
			return true, err
		}
		ref := c.ID // a token's or locked proofs'
		switch {
		case c.MeltQuote != nil:
			ref = c.MeltQuote.ID
		case c.Method != MethodCashu && c.Method != MethodNutzap:
			return true, nil // no melt was recorded, so none was made
		}
		p, err := s.tr.PayoutIn(txn, ref)
		if err != nil {
			return false, err
		}
		st.TotalFeeSats += p.FeeSats
		if p.Paid {
			paid[c.ID] = true
			st.TotalPaidSats += c.AmountSats
			st.TotalClaims++
			if c.Day == today {
				st.DailySpentSats = max(0, st.DailySpentSats+p.FeeSats-c.FeeReserveSats)
			}
		}
		return true, nil
	})
	return paid, err
}
