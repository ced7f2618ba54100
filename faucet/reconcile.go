package faucet

import (
	"context"
	"sync"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// unsureGrace is how long a payment whose melt call failed stays pending
// before the mint's "unpaid" is believed: a melt request still travelling
// to the mint could turn it into "paid".
const unsureGrace = time.Minute

// mintCheckEvery is how often the mint's health is asked for /health.
const mintCheckEvery = 30 * time.Second

// mintCheck times the background job's questions to the mint.
type mintCheck struct {
	mu   sync.Mutex
	last time.Time
}

// Run is the faucet's background job: it settles unsettled claims (pending
// payments, and payments a crashed process left unanswered), completes
// paid deposit invoices, keeps the embedded test mint's wallet funded and
// watches the mint. It returns when ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	kicked := true
	for {
		s.tick(ctx, kicked)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			kicked = false
		case <-s.kick:
			kicked = true
		}
	}
}

// tick does one round; a panic in it is logged, not fatal to the program.
func (s *Service) tick(ctx context.Context, kicked bool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("faucet background job panicked", "panic", r)
		}
	}()
	// Each round is bounded below the shutdown timeout's usual size.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s.checkMint(ctx)
	if !s.db.Writable() {
		// Settling a stopped process's claims, completing deposits and
		// topping up start operations at the mint, whose writes are
		// refused: they wait until the disk has room again.
		return
	}
	s.ReconcileClaims(ctx)
	s.SendNutzaps(ctx)
	s.completeDeposits(ctx, kicked)
	s.TopUp(ctx)
	if time.Since(s.tidied) >= tidyEvery {
		s.tidied = time.Now()
		if err := s.tr.Tidy(ctx); err != nil {
			s.log.Debug("faucet wallet: tidy", "err", err)
		}
	}
}

// tidyEvery is how often the wallet forgets ecash it handed out that the
// mint reports spent (tokens users redeemed).
const tidyEvery = time.Hour

func (s *Service) checkMint(ctx context.Context) {
	s.mint.mu.Lock()
	due := s.mint.last.IsZero() || time.Since(s.mint.last) >= mintCheckEvery
	if due {
		s.mint.last = time.Now()
	}
	s.mint.mu.Unlock()
	if !due {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	s.tr.CheckMint(cctx) // settles the wallet's open operations too; Health reads the outcome
}

// reconcileBatch bounds how many claims one round settles: each may ask
// the mint, and the round has 30 s; the rest wait for the next round.
const reconcileBatch = 100

// ReconcileClaims settles every unsettled claim it can (up to
// reconcileBatch a round): pending payments by asking the mint, and claims
// left "paying" that no call of this process is paying any more — a
// stopped process's, or this one's whose call ended without recording how
// (a write that failed, a panic) — by their recorded intent, the same way
// after a restart as while running. A claim a call is still paying is
// left to that call, and a claim is settled by one goroutine at a time.
func (s *Service) ReconcileClaims(ctx context.Context) {
	var ids []string
	err := s.db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: key(kindUnsettled)})
		defer it.Close()
		for it.Rewind(); it.Valid() && len(ids) < reconcileBatch; it.Next() {
			id, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			ids = append(ids, string(id))
		}
		return nil
	})
	if err != nil {
		s.log.Error("faucet reconcile: list", "err", err)
		return
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		s.reconcile(ctx, id)
	}
}

// reconcile settles claim id unless a call is paying it. The claim is read
// after it is taken: a call that let it go has recorded all it will.
func (s *Service) reconcile(ctx context.Context, id string) {
	if !s.paying.take(id) {
		return
	}
	defer s.paying.drop(id)
	var c Claim
	var found bool
	if err := s.db.View(func(txn *kv.Txn) (err error) { c, found, err = getClaim(txn, id); return }); err != nil {
		s.log.Error("faucet reconcile: read", "claim", id, "err", err)
		return
	}
	switch {
	case !found || (c.State != ClaimPaying && c.State != ClaimPending):
	case c.Method == MethodCashu && c.State == ClaimPaying:
		s.settleToken(ctx, c)
	case c.Method == MethodNutzap && c.State == ClaimPaying:
		s.settleNutzap(ctx, c)
	case c.MeltQuote == nil:
		// No melt was recorded, so none was made: an invoice lookup
		// was cut short.
		s.fail(c, outpost.Errorf(outpost.BadGateway, "payment_failed", "interrupted before paying"))
	default:
		s.settleMelt(ctx, c)
	}
}

// settleMelt asks the mint about a claim's melt: paid, still pending, or
// failed (after a grace period when the melt call got no answer).
func (s *Service) settleMelt(ctx context.Context, c Claim) {
	q := *c.MeltQuote
	if q.PaymentHash == "" { // recorded before melt quotes carried it
		q.PaymentHash = c.PaymentHash
	}
	p, err := s.tr.MeltStatus(ctx, q)
	if err != nil {
		s.log.Debug("faucet reconcile: mint not answering", "claim", c.ID, "err", err)
		return
	}
	switch p.State {
	case treasury.Paid:
		s.settle(c, ClaimPaid, p)
	case treasury.Pending:
		if c.State == ClaimPaying {
			s.settle(c, ClaimPending, p)
		}
	case treasury.Failed:
		if c.Unsure && s.now().Before(time.Unix(c.AttemptedAt, 0).Add(unsureGrace)) {
			return
		}
		s.failCost(c, outpost.Errorf(outpost.BadGateway, "payment_failed", "the Lightning payment failed"), p.FeeSats)
	}
}

// settleToken settles a token payout a stopped process left paying: it
// stopped between making the token and recording the claim, so the user
// never got it. The token comes back to the wallet, unless someone
// redeemed it.
func (s *Service) settleToken(ctx context.Context, c Claim) {
	r, err := s.tr.Reclaim(ctx, c.ID)
	switch {
	case err != nil:
		s.log.Debug("faucet reconcile: token payout not settled yet", "claim", c.ID, "err", err)
	case r.Redeemed:
		s.settle(c, ClaimPaid, treasury.Payment{State: treasury.Paid, FeeSats: r.FeeSats})
	default:
		s.failCost(c, outpost.Errorf(outpost.BadGateway, "payment_failed", "interrupted before paying"), r.FeeSats)
	}
}

// TopUp funds the embedded test mint's wallet up to TestMintFunding when
// it has less than a day's budget above the minimum balance, through a
// mint quote the fake network pays, recorded as a deposit.
func (s *Service) TopUp(ctx context.Context) {
	if s.cfg.TestMint == nil {
		return
	}
	bal, ok := s.tr.Balance()
	if !ok || bal >= s.cfg.MinBalanceSats+s.cfg.DailyBudgetSats || s.cfg.TestMintFunding <= bal {
		return
	}
	if err := s.Fund(ctx, s.cfg.TestMintFunding-bal); err != nil {
		s.log.Log(ctx, kv.FailureLevel(err), "faucet test mint: funding failed", "err", err)
	}
}

// Fund adds amountSats from the embedded test mint (a deposit of kind
// test_mint).
func (s *Service) Fund(ctx context.Context, amountSats int64) error {
	if s.cfg.TestMint == nil {
		return outpost.Errorf(outpost.Forbidden, "not_test_mint", "only the embedded test mint funds the faucet by itself")
	}
	mq, err := s.tr.RequestMint(ctx, amountSats)
	if err != nil {
		return err
	}
	dep, err := s.openDeposit(DepositTestMint, mq)
	if err != nil {
		return err
	}
	if err := s.cfg.TestMint.Pay(mq.Invoice); err != nil {
		return err
	}
	st, err := s.tr.CompleteMint(ctx, mq.ID)
	if err != nil {
		return err // completed by the background job later
	}
	if st == treasury.MintIssued {
		s.closeDeposit(dep, DepositCompleted)
	}
	s.log.Info("faucet test mint funded the wallet", "amount_sats", amountSats)
	return nil
}
