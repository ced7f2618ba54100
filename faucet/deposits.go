package faucet

import (
	"context"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Deposit kinds and states.
const (
	DepositLightning = "lightning"
	DepositEcash     = "ecash"
	DepositTestMint  = "test_mint" // the embedded test mint topping the wallet up

	DepositPending   = "pending"
	DepositCompleted = "completed"
	DepositExpired   = "expired"
	DepositLost      = "lost"
)

// Deposit is money coming in.
type Deposit struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	State       string `json:"state"`
	AmountSats  int64  `json:"amount_sats"`
	FeeSats     int64  `json:"fee_sats"`
	MintURL     string `json:"mint_url"`
	MintQuoteID string `json:"mint_quote_id,omitempty"` // never shown: whoever has it can mint the ecash
	Invoice     string `json:"invoice,omitempty"`
	CreatedAt   int64  `json:"created_at"`
	ExpiresAt   int64  `json:"expires_at,omitempty"`
	CompletedAt int64  `json:"completed_at,omitempty"`
}

// DepositInfo is what GET /deposit shows.
type DepositInfo struct {
	MintURL       string            `json:"mint_url"`
	AcceptedMints []string          `json:"accepted_mints"`
	TestMint      bool              `json:"test_mint"`
	Lightning     LightningDeposits `json:"lightning"`
	Ecash         EcashDeposits     `json:"ecash"`
	AmountSats    *int64            `json:"amount_sats"`
	Invoice       *string           `json:"invoice"`
	QuoteID       *string           `json:"quote_id"`
	ExpiresAt     *int64            `json:"expires_at"`
}

// LightningDeposits describes deposits by invoice.
type LightningDeposits struct {
	Enabled bool  `json:"enabled"`
	MinSats int64 `json:"min_sats"`
	MaxSats int64 `json:"max_sats"`
}

// EcashDeposits describes deposits by token.
type EcashDeposits struct {
	Enabled      bool  `json:"enabled"`
	MaxTokenSats int64 `json:"max_token_sats"`
}

// Both kinds of deposit are always taken.
func (c *Config) lightningDeposits() LightningDeposits {
	return LightningDeposits{Enabled: true, MinSats: c.DepositMinSats, MaxSats: c.DepositMaxSats}
}

func (c *Config) ecashDeposits() EcashDeposits {
	return EcashDeposits{Enabled: true, MaxTokenSats: c.MaxTokenSats}
}

// DepositInfo describes deposits; with amountSats > 0 it also makes an
// invoice whose payment the background job mints into the wallet.
func (s *Service) DepositInfo(ctx context.Context, amountSats int64) (DepositInfo, error) {
	c := s.cfg
	info := DepositInfo{MintURL: s.tr.MintURL(), AcceptedMints: s.tr.AcceptedMints(), TestMint: c.TestMint != nil,
		Lightning: c.lightningDeposits(), Ecash: c.ecashDeposits()}
	if amountSats == 0 {
		return info, nil
	}
	if amountSats < c.DepositMinSats || amountSats > c.DepositMaxSats {
		return DepositInfo{}, outpost.Errorf(outpost.Unprocessable, "amount_out_of_range",
			"deposits by Lightning take %d to %d sats", c.DepositMinSats, c.DepositMaxSats).
			With("min_sats", c.DepositMinSats).With("max_sats", c.DepositMaxSats)
	}
	if n, err := s.openDeposits(); err != nil {
		return DepositInfo{}, err
	} else if n >= maxOpenDeposits {
		return DepositInfo{}, outpost.Errorf(outpost.Unavailable, "deposits_busy", "too many deposit invoices are waiting to be paid; try again later")
	}
	mq, err := s.tr.RequestMint(ctx, amountSats)
	if err != nil {
		return DepositInfo{}, err
	}
	dep, err := s.openDeposit(DepositLightning, mq)
	if err != nil {
		return DepositInfo{}, err
	}
	info.AmountSats, info.Invoice, info.QuoteID, info.ExpiresAt = &dep.AmountSats, &dep.Invoice, &dep.ID, &dep.ExpiresAt
	return info, nil
}

// maxOpenDeposits caps the deposit invoices waiting to be paid: each one
// costs the background job a question to the mint per round until it
// expires, and anyone may ask for one.
const maxOpenDeposits = 1000

func (s *Service) openDeposits() (int, error) {
	n := 0
	err := s.db.View(func(txn *kv.Txn) error {
		return kv.EachKey(txn, key(kindOpenDeposit), func([]byte) (bool, error) { n++; return true, nil })
	})
	return n, err
}

func (s *Service) openDeposit(kind string, mq treasury.MintQuote) (Deposit, error) {
	dep := Deposit{ID: newID("d_"), Kind: kind, State: DepositPending, AmountSats: mq.AmountSats, MintURL: s.tr.MintURL(),
		MintQuoteID: mq.ID, Invoice: mq.Invoice, CreatedAt: s.now().Unix(), ExpiresAt: mq.ExpiresAt.Unix()}
	err := s.db.Update(func(txn *kv.Txn) error {
		if err := kv.PutJSON(txn, key(kindDeposit, dep.ID), dep); err != nil {
			return err
		}
		return txn.Set(key(kindOpenDeposit, dep.ID), []byte(dep.ID))
	})
	return dep, err
}

// RedeemResult is the answer to a token deposit.
type RedeemResult struct {
	DepositID   string `json:"deposit_id"`
	AmountSats  int64  `json:"amount_sats"`
	FeeSats     int64  `json:"fee_sats"`
	MintURL     string `json:"mint_url"`
	BalanceSats int64  `json:"balance_sats"`
}

var errTokenSpent = outpost.Errorf(outpost.Conflict, "token_already_spent", "this token was already spent")

// RedeemEcash swaps a token into the wallet. A token seen before is refused
// from our own records (its proofs' Ys) without asking the mint.
func (s *Service) RedeemEcash(ctx context.Context, token string) (RedeemResult, error) {
	p, err := treasury.ParseToken(token)
	if err != nil {
		return RedeemResult{}, err
	}
	if !s.tr.Accepts(p.Mint) {
		return RedeemResult{}, outpost.Errorf(outpost.Unprocessable, "mint_not_accepted", "tokens of %s are not accepted here", p.Mint).
			With("accepted_mints", s.tr.AcceptedMints())
	}
	if max := s.cfg.MaxTokenSats; max > 0 && p.AmountSats > max {
		return RedeemResult{}, outpost.Errorf(outpost.Unprocessable, "token_too_large", "tokens of up to %d sats are accepted, this one holds %d",
			max, p.AmountSats).With("max_token_sats", max)
	}
	seen := false
	if err := s.db.View(func(txn *kv.Txn) error {
		for _, y := range p.Ys {
			if _, err := txn.Get(key(kindRedeemed, y)); err == nil {
				seen = true
				return nil
			} else if err != kv.ErrNotFound {
				return err
			}
		}
		return nil
	}); err != nil {
		return RedeemResult{}, err
	}
	if seen {
		return RedeemResult{}, errTokenSpent
	}
	if p.Mint != s.tr.MintURL() {
		return s.redeemForeign(ctx, p)
	}
	// The deposit is recorded, open, before the wallet takes the token in
	// under its id, and booked in the transaction that reads what the
	// wallet took in: a lost answer or a crash in between leaves it open,
	// and the deposit job books it once the wallet knows.
	dep, err := s.openEcashDeposit(p)
	if err != nil {
		return RedeemResult{}, err
	}
	defer s.paying.drop(dep.ID)
	_, err = s.tr.Redeem(ctx, p, dep.ID)
	booked, berr := s.bookEcashDeposit(dep.ID, p.Ys)
	if err != nil {
		return RedeemResult{}, err
	}
	if berr != nil || booked.State != DepositCompleted {
		// The sats are in the wallet; the deposit job books them.
		s.log.Error("faucet deposit: redeemed but not recorded yet", "deposit", dep.ID, "err", berr)
		booked = dep
	}
	return s.redeemed(booked), nil
}

// openEcashDeposit records a deposit of token p, open, held by the
// calling process (drop it from s.paying once booked or left).
func (s *Service) openEcashDeposit(p treasury.ParsedToken) (Deposit, error) {
	dep := Deposit{ID: newID("d_"), Kind: DepositEcash, State: DepositPending, AmountSats: p.AmountSats, MintURL: p.Mint, CreatedAt: s.now().Unix()}
	s.paying.take(dep.ID)
	err := s.db.Update(func(txn *kv.Txn) error {
		if err := kv.PutJSON(txn, key(kindDeposit, dep.ID), dep); err != nil {
			return err
		}
		return txn.Set(key(kindOpenDeposit, dep.ID), []byte(dep.ID))
	})
	if err != nil {
		s.paying.drop(dep.ID)
	}
	return dep, err
}

// bookEcashDeposit books token deposit id once the wallet knows what it
// took in, in the transaction that reads it: completed with what came in
// (ys, the token's proofs, then refuse it again without asking the mint),
// or dropped if nothing did (the mint refused the token, or it never
// reached the mint). It returns the deposit as it stands; one still
// pending waits for the wallet to settle its swap.
func (s *Service) bookEcashDeposit(id string, ys []string) (Deposit, error) {
	var d Deposit
	err := s.db.Record(func(txn *kv.Txn) error {
		found, err := kv.GetJSON(txn, key(kindDeposit, id), &d)
		if err != nil || !found || d.State != DepositPending {
			return err
		}
		r, err := s.tr.ReceiptIn(txn, id)
		if err != nil || !r.Settled {
			return err
		}
		if err := txn.Delete(key(kindOpenDeposit, id)); err != nil {
			return err
		}
		if r.AmountSats == 0 {
			d.State = ""
			return txn.Delete(key(kindDeposit, id))
		}
		d.State, d.AmountSats, d.FeeSats, d.CompletedAt = DepositCompleted, r.AmountSats, r.FeeSats, s.now().Unix()
		return s.putTokenDeposit(txn, d, ys)
	})
	return d, err
}

// putTokenDeposit writes token deposit d, completed, and books it; ys (its
// proofs') make the same token refused again without asking the mint.
func (s *Service) putTokenDeposit(txn *kv.Txn, d Deposit, ys []string) error {
	for _, y := range ys {
		if err := txn.Set(key(kindRedeemed, y), []byte(d.ID)); err != nil {
			return err
		}
	}
	if err := kv.PutJSON(txn, key(kindDeposit, d.ID), d); err != nil {
		return err
	}
	return s.addTotals(txn, func(t *totals) {
		t.DepositedSats += d.AmountSats
		t.DepositFeeSats += d.FeeSats
		t.Deposits++
	})
}

// redeemed answers a token deposit d.
func (s *Service) redeemed(d Deposit) RedeemResult {
	s.log.Info("faucet deposit by token", "deposit", d.ID, "amount_sats", d.AmountSats, "mint", d.MintURL)
	bal, _ := s.tr.Balance()
	return RedeemResult{DepositID: d.ID, AmountSats: d.AmountSats, FeeSats: d.FeeSats, MintURL: d.MintURL, BalanceSats: bal}
}

// redeemForeign takes in a token of another accepted mint (moved to the
// faucet's mint by a melt there) and books it.
func (s *Service) redeemForeign(ctx context.Context, p treasury.ParsedToken) (RedeemResult, error) {
	r, err := s.tr.Redeem(ctx, p, "")
	if err != nil {
		return RedeemResult{}, err
	}
	now := s.now().Unix()
	dep := Deposit{ID: newID("d_"), Kind: DepositEcash, State: DepositCompleted, AmountSats: r.AmountSats, FeeSats: r.FeeSats,
		MintURL: r.MintURL, CreatedAt: now, CompletedAt: now}
	if err := s.db.Update(func(txn *kv.Txn) error { return s.putTokenDeposit(txn, dep, p.Ys) }); err != nil {
		// The sats are in the wallet; only the record is missing.
		s.log.Error("faucet deposit: redeemed but not recorded", "amount_sats", r.AmountSats, "err", err)
	}
	return s.redeemed(dep), nil
}

// SimulatePayment pays an invoice of the embedded test mint's fake
// Lightning node, standing in for the outside payer a test network lacks.
// It exists only with the test mint.
func (s *Service) SimulatePayment(ctx context.Context, invoice string) (string, error) {
	if s.cfg.TestMint == nil {
		return "", outpost.Errorf(outpost.NotFound, "not_found", "payments can only be simulated with the embedded test mint")
	}
	inv, err := bolt11.Decode(invoice)
	if err != nil {
		return "", err
	}
	if err := s.cfg.TestMint.Pay(inv.Raw); err != nil {
		return "", outpost.Errorf(outpost.Unprocessable, "invoice_not_payable", "the test mint's Lightning node cannot pay this invoice: %v", err)
	}
	s.Kick()
	return inv.PaymentHash, nil
}

// completeDeposits mints the ecash of paid deposit invoices and closes
// expired ones. Fresh invoices are asked about every round; older ones,
// which anyone may have asked for and left unpaid, once a minute unless
// the job was kicked (after a simulated payment, say).
func (s *Service) completeDeposits(ctx context.Context, kicked bool) {
	var open []Deposit
	err := s.db.View(func(txn *kv.Txn) (err error) {
		open, err = openDepositsIn(txn)
		return err
	})
	if err != nil {
		s.log.Error("faucet deposits: list", "err", err)
		return
	}
	now := s.now()
	asked := make(map[string]time.Time, len(open)) // replaces s.depositAsked: closed ones drop out
	defer func() { s.depositAsked = asked }()
	for _, d := range open {
		last, seen := s.depositAsked[d.ID]
		asked[d.ID] = last
		if ctx.Err() != nil {
			continue
		}
		if !kicked && seen && now.Sub(time.Unix(d.CreatedAt, 0)) > 10*time.Minute && now.Sub(last) < time.Minute {
			continue
		}
		if d.Kind == DepositEcash {
			s.settleOpenEcash(d.ID)
			continue
		}
		asked[d.ID] = now
		st, err := s.tr.CompleteMint(ctx, d.MintQuoteID)
		if err != nil {
			s.log.Debug("faucet deposits: not completed yet", "deposit", d.ID, "err", err)
			continue
		}
		switch {
		case st == treasury.MintIssued:
			s.closeDeposit(d, DepositCompleted)
		case st == treasury.MintLost:
			s.log.Warn("faucet deposits: the mint issued this quote's ecash, but not to our wallet's records", "deposit", d.ID)
			s.closeDeposit(d, DepositLost)
		case now.Unix() > d.ExpiresAt+int64(time.Hour.Seconds()):
			// Expired invoices can no longer be paid; an hour of slack
			// covers clock differences with the mint.
			s.closeDeposit(d, DepositExpired)
		}
	}
}

// settleOpenEcash books a token deposit a call left open (its answer was
// lost, or the process stopped) unless a call is taking it in now.
func (s *Service) settleOpenEcash(id string) {
	if !s.paying.take(id) {
		return
	}
	defer s.paying.drop(id)
	if d, err := s.bookEcashDeposit(id, nil); err != nil {
		s.log.Log(context.Background(), kv.FailureLevel(err), "faucet deposits: record", "deposit", id, "err", err) // tried again next round
	} else if d.State == DepositCompleted {
		s.log.Info("faucet deposit by token booked after the fact", "deposit", id, "amount_sats", d.AmountSats)
	}
}

// closeDeposit closes a Lightning deposit in state, booking a completed one.
func (s *Service) closeDeposit(d Deposit, state string) {
	changed := false
	err := s.db.Update(func(txn *kv.Txn) error {
		changed = false
		var cur Deposit
		if found, err := kv.GetJSON(txn, key(kindDeposit, d.ID), &cur); err != nil || !found || cur.State != DepositPending {
			return err // closed already (by the background job, or Fund)
		}
		changed = true
		cur.State, cur.CompletedAt = state, s.now().Unix()
		if err := kv.PutJSON(txn, key(kindDeposit, d.ID), cur); err != nil {
			return err
		}
		if err := txn.Delete(key(kindOpenDeposit, d.ID)); err != nil {
			return err
		}
		if state != DepositCompleted {
			return nil
		}
		return s.addTotals(txn, func(t *totals) {
			t.DepositedSats += cur.AmountSats
			t.Deposits++
		})
	})
	if err != nil {
		s.log.Log(context.Background(), kv.FailureLevel(err), "faucet deposits: record", "deposit", d.ID, "err", err) // tried again next round
		return
	}
	if !changed {
		return
	}
	s.log.Info("faucet deposit closed", "deposit", d.ID, "kind", d.Kind, "state", state, "amount_sats", d.AmountSats)
}

// openDepositsIn lists the deposits not closed yet (at most
// maxOpenDeposits), as txn sees them.
func openDepositsIn(txn *kv.Txn) ([]Deposit, error) {
	var open []Deposit
	it := txn.NewIterator(kv.IteratorOptions{Prefix: key(kindOpenDeposit)})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		id, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		var d Deposit
		if found, err := kv.GetJSON(txn, key(kindDeposit, string(id)), &d); err != nil {
			return nil, err
		} else if found {
			open = append(open, d)
		}
	}
	return open, nil
}
