package faucet

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/cashu/lnurl"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Quote states. A quote is open until confirmed (used) or replaced by a
// quote for another method (superseded); past ExpiresAt it is expired
// whatever its state says.
const (
	QuoteOpen       = "open"
	QuoteUsed       = "used"
	QuoteSuperseded = "superseded"
)

// Quote locks a claim's amount for a short time.
type Quote struct {
	ID          string `json:"id"`
	PubKey      string `json:"pubkey"`
	Method      string `json:"method"`
	Destination string `json:"destination,omitempty"` // Lightning address
	AmountSats  int64  `json:"amount_sats"`
	CreatedAt   int64  `json:"created_at"`
	ExpiresAt   int64  `json:"expires_at"`
	State       string `json:"state"`
	ClaimID     string `json:"claim_id,omitempty"`
	// Nutzap is where a nutzap quote pays, from the user's 10019.
	Nutzap *NutzapTarget `json:"nutzap,omitempty"`
}

// QuoteResult is the API's view of a quote.
type QuoteResult struct {
	QuoteID     string  `json:"quote_id"`
	Method      string  `json:"method"`
	AmountSats  int64   `json:"amount_sats"`
	Destination *string `json:"destination"`
	ExpiresAt   int64   `json:"expires_at"`
	CreatedAt   int64   `json:"created_at"`
}

// Result is the quote as the API shows it.
func (q Quote) Result() QuoteResult {
	return QuoteResult{QuoteID: q.ID, Method: q.Method, AmountSats: q.AmountSats, Destination: strOrNil(q.Destination),
		ExpiresAt: q.ExpiresAt, CreatedAt: q.CreatedAt}
}

// Claim states: paying from the confirm until the treasury answers; then
// paid, pending (the Lightning payment is in flight; reservations are kept
// and the background job asks the mint again) or failed (reservations
// released). paying and pending claims are "unsettled".
const (
	ClaimPaying  = "paying"
	ClaimPaid    = "paid"
	ClaimPending = "pending"
	ClaimFailed  = "failed"
)

// Claim is one confirmed quote and its payment.
type Claim struct {
	ID             string `json:"id"`
	QuoteID        string `json:"quote_id"`
	PubKey         string `json:"pubkey"`
	Method         string `json:"method"`
	Destination    string `json:"destination,omitempty"`
	AmountSats     int64  `json:"amount_sats"`
	FeeReserveSats int64  `json:"fee_reserve_sats"` // held in the budget until the fee is known
	FeeSats        int64  `json:"fee_sats"`
	State          string `json:"state"`
	IPHash         string `json:"ip_hash"`
	Day            string `json:"day"` // the budget day it counts against
	Run            string `json:"run"` // the process that took it, for the record (the background job goes by which claims calls are paying)
	// The payment intent, written before the treasury is asked to pay.
	Bolt11      string              `json:"bolt11,omitempty"`
	PaymentHash string              `json:"payment_hash,omitempty"`
	MeltQuote   *treasury.MeltQuote `json:"melt_quote,omitempty"`
	Nutzap      *NutzapTarget       `json:"nutzap,omitempty"` // and, once made, its event
	Unsure      bool                `json:"unsure,omitempty"`
	Preimage    string              `json:"preimage,omitempty"`
	// Token is a token payout's token, recorded with its paid state, so a
	// client whose answer was lost learns it again (GET /claims/{quote_id}).
	Token       string `json:"token,omitempty"`
	Reason      string `json:"reason,omitempty"`
	CreatedAt   int64  `json:"created_at"`
	AttemptedAt int64  `json:"attempted_at,omitempty"`
	PaidAt      int64  `json:"paid_at,omitempty"`
	NextClaimAt int64  `json:"next_claim_at,omitempty"`
}

// ConfirmResult is the API's view of a claim.
type ConfirmResult struct {
	ClaimID     string  `json:"claim_id"`
	QuoteID     string  `json:"quote_id"`
	Status      string  `json:"status"`
	AmountSats  int64   `json:"amount_sats"`
	FeeSats     *int64  `json:"fee_sats"`
	Token       *string `json:"token"`
	PaymentHash *string `json:"payment_hash"`
	Preimage    *string `json:"preimage"`
	PaidAt      *int64  `json:"paid_at"`
	NextClaimAt *int64  `json:"next_claim_at"`
	// Nutzap is the kind-9321 event of a nutzap payout; null otherwise.
	Nutzap *NutzapResult `json:"nutzap"`
}

func (c Claim) result(token string) ConfirmResult {
	r := ConfirmResult{ClaimID: c.ID, QuoteID: c.QuoteID, Status: c.State, AmountSats: c.AmountSats,
		Token: strOrNil(token), PaymentHash: strOrNil(c.PaymentHash), Preimage: strOrNil(c.Preimage),
		PaidAt: intOrNil(c.PaidAt), NextClaimAt: intOrNil(c.NextClaimAt), Nutzap: c.Nutzap.result()}
	if c.State == ClaimPaying {
		r.Status = ClaimPending // its outcome is settled in the background
	}
	if c.State == ClaimPaid {
		fee := c.FeeSats
		r.FeeSats = &fee
	}
	return r
}

func getQuote(txn *kv.Txn, id string) (Quote, bool, error) {
	var q Quote
	found, err := kv.GetJSON(txn, key(kindQuote, id), &q)
	return q, found, err
}

func getClaim(txn *kv.Txn, id string) (Claim, bool, error) {
	var c Claim
	found, err := kv.GetJSON(txn, key(kindClaim, id), &c)
	return c, found, err
}

func errDisabled() error {
	return outpost.Errorf(outpost.Unavailable, "faucet_disabled", "the faucet is turned off")
}

var errNPub = outpost.Errorf(outpost.Forbidden, "npub_session_restricted",
	"an npub login can only claim with method lightning_address to the lud16 of its own profile; log in with NIP-98 for the other methods")

func errNoLightningAddress() error {
	return outpost.Errorf(outpost.Unprocessable, "no_lightning_address",
		"your profile (kind 0) has no lud16 Lightning address; publish one to this relay and call /user/refresh-profile")
}

// destination works out where a quote pays: the Lightning address asked
// for, or the profile's; for npub sessions only the profile's.
func (s *Service) destination(sess Session, u User, method, address string) (string, error) {
	if method != MethodLightningAddress {
		if sess.Method == LoginNPub {
			return "", errNPub
		}
		if address != "" {
			return "", outpost.Errorf(outpost.Invalid, "invalid_request", "lightning_address is only for method lightning_address").With("field", "lightning_address")
		}
		return "", nil
	}
	lud16 := u.LUD16()
	if sess.Method == LoginNPub {
		if lud16 == "" {
			return "", errNoLightningAddress()
		}
		if address != "" && !strings.EqualFold(strings.TrimSpace(address), lud16) {
			return "", errNPub
		}
		address = lud16
	}
	if address == "" {
		if lud16 == "" {
			return "", errNoLightningAddress()
		}
		address = lud16
	}
	a, err := lnurl.ParseAddress(address)
	if err != nil {
		return "", err
	}
	return a.String(), nil
}

// eligibleAt is when the account is old enough (zero when it is, or when
// there is no age requirement); unknown is set when no event was ever seen.
func (s *Service) eligibleAt(u User) (at time.Time, unknown bool) {
	if s.cfg.MinAccountAge <= 0 {
		return time.Time{}, false
	}
	if u.FirstSeenAt == 0 {
		return time.Time{}, true
	}
	at = time.Unix(u.FirstSeenAt, 0).Add(s.cfg.MinAccountAge)
	if !s.now().Before(at) {
		return time.Time{}, false
	}
	return at, false
}

func (s *Service) checkAge(u User) error {
	at, unknown := s.eligibleAt(u)
	switch {
	case unknown:
		return outpost.Errorf(outpost.Forbidden, "account_too_new",
			"no event of yours is known here or on the profile relays; accounts must be at least %s old", s.cfg.MinAccountAge).
			With("first_seen_at", nil)
	case !at.IsZero():
		return outpost.Errorf(outpost.Forbidden, "account_too_new", "accounts must be at least %s old; yours is eligible from %s",
			s.cfg.MinAccountAge, at.UTC().Format(time.RFC3339)).With("first_seen_at", u.FirstSeenAt).With("eligible_at", at.Unix())
	}
	return nil
}

// Quote makes (or returns) the user's quote for method. Checks run in the
// design's order: enabled, session rights, eligibility, cooldowns, budget
// and balance, Lightning address.
// note, for a nutzap, is the event the claim answers (its e tag).
func (s *Service) Quote(ctx context.Context, sess Session, ip, method, address, note string) (QuoteResult, error) {
	if !s.cfg.Enabled {
		return QuoteResult{}, errDisabled()
	}
	u, err := s.EnsureUser(ctx, sess.PubKey)
	if err != nil {
		return QuoteResult{}, err
	}
	dest, err := s.destination(sess, u, method, address)
	if err != nil {
		return QuoteResult{}, err
	}
	nutzap, err := s.nutzapQuote(ctx, sess.PubKey, method, note)
	if err != nil {
		return QuoteResult{}, err
	}
	if nutzap != nil {
		dest = nutzap.Key
	}
	if err := s.checkAge(u); err != nil {
		return QuoteResult{}, err
	}
	if err := s.checkTrust(u.PubKey); err != nil {
		return QuoteResult{}, err
	}
	now := s.now()
	ipHash := s.ipHash(ip)
	var l limits
	var open Quote
	var hasOpen bool
	err = s.db.View(func(txn *kv.Txn) error {
		var err error
		if l, err = s.readLimits(txn, sess.PubKey, ipHash, now); err != nil {
			return err
		}
		open, hasOpen, err = s.openQuote(txn, sess.PubKey, now)
		return err
	})
	if err != nil {
		return QuoteResult{}, err
	}
	// Cooldowns first (amount 0: the budget comes once the amount is known).
	if err := s.check(limits{cooldown: l.cooldown, ip: l.ip, sitewide: l.sitewide}, 0, now); err != nil {
		return QuoteResult{}, err
	}
	if hasOpen && open.Method == method && open.Destination == dest {
		return open.Result(), nil // no re-roll
	}
	amount := s.drawAmount()
	if hasOpen {
		amount = open.AmountSats // the amount stays locked across a change of method
	}
	if err := s.check(l, amount, now); err != nil {
		return QuoteResult{}, err
	}
	if err := s.checkBalance(amount); err != nil {
		return QuoteResult{}, err
	}
	if method == MethodLightningAddress {
		if err := s.checkLightningAddress(ctx, dest, amount); err != nil {
			return QuoteResult{}, err
		}
	}
	q := Quote{ID: newID("q_"), PubKey: sess.PubKey, Method: method, Destination: dest, AmountSats: amount,
		CreatedAt: now.Unix(), ExpiresAt: now.Add(s.cfg.QuoteTTL).Unix(), State: QuoteOpen, Nutzap: nutzap}
	if q, err = s.storeQuote(q, now); err != nil {
		return QuoteResult{}, err
	}
	return q.Result(), nil
}

// checkLightningAddress resolves the address and checks it takes amount.
func (s *Service) checkLightningAddress(ctx context.Context, dest string, amount int64) error {
	a, _ := lnurl.ParseAddress(dest)
	p, err := s.cfg.LNURL.Resolve(ctx, a)
	if err != nil {
		return err
	}
	return p.Accepts(a, amount)
}

// storeQuote makes q the user's open quote, superseding one for another
// method or destination; it returns the quote that is open now, which is
// another one when a concurrent request made the same quote first.
func (s *Service) storeQuote(q Quote, now time.Time) (Quote, error) {
	var open Quote
	err := s.db.Update(func(txn *kv.Txn) error {
		open = q
		cur, has, err := s.openQuote(txn, q.PubKey, now)
		if err != nil {
			return err
		}
		if has && cur.Method == q.Method && cur.Destination == q.Destination {
			open = cur
			return nil
		}
		if has {
			cur.State = QuoteSuperseded
			if err := s.putQuote(txn, cur); err != nil {
				return err
			}
		}
		if err := s.putQuote(txn, q); err != nil {
			return err
		}
		return txn.SetTTL(key(kindOpenQuote, q.PubKey), []byte(q.ID), s.cfg.QuoteTTL+time.Hour)
	})
	return open, err
}

// quoteKeep is how long quotes stay in the store, so a late confirm learns
// the quote was used or expired rather than "not found".
const quoteKeep = 7 * 24 * time.Hour

func (s *Service) putQuote(txn *kv.Txn, q Quote) error {
	v, err := jsonBytes(q)
	if err != nil {
		return err
	}
	return txn.SetTTL(key(kindQuote, q.ID), v, s.cfg.QuoteTTL+quoteKeep)
}

// openQuote is the user's unexpired open quote, if any.
func (s *Service) openQuote(txn *kv.Txn, pk string, now time.Time) (Quote, bool, error) {
	item, err := txn.Get(key(kindOpenQuote, pk))
	if errors.Is(err, kv.ErrNotFound) {
		return Quote{}, false, nil
	}
	if err != nil {
		return Quote{}, false, err
	}
	id, err := item.ValueCopy(nil)
	if err != nil {
		return Quote{}, false, err
	}
	q, found, err := getQuote(txn, string(id))
	if err != nil || !found || q.State != QuoteOpen || now.Unix() >= q.ExpiresAt {
		return Quote{}, false, err
	}
	return q, true, nil
}

// checkQuote is the quote's answer to a confirm: 404 when unknown or not
// the caller's, 409 when used, 410 when expired or replaced.
func (s *Service) checkQuote(q Quote, found bool, pk string, now time.Time) error {
	switch {
	case !found || q.PubKey != pk:
		return outpost.Errorf(outpost.NotFound, "quote_not_found", "no such quote of yours")
	case q.State == QuoteUsed:
		return outpost.Errorf(outpost.Conflict, "quote_already_used", "this quote was already confirmed").With("claim_id", q.ClaimID)
	case q.State == QuoteSuperseded:
		return outpost.Errorf(outpost.Gone, "quote_expired", "this quote was replaced by a newer one")
	case now.Unix() >= q.ExpiresAt:
		return outpost.Errorf(outpost.Gone, "quote_expired", "this quote expired at %s; ask for a new one",
			time.Unix(q.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// Confirm pays a quote, once. The quote moves from open to used in the
// same transaction that takes the claim's reservations, so of concurrent
// confirms exactly one wins; the others see it used (409). The payment
// intent is stored before money moves, and the outcome after, so a crash
// in between, or a call that ends without recording the outcome, is
// reconciled by state (see ReconcileClaims), never by paying again. The
// result's Status is the claim's state: paid, or pending while the
// Lightning payment is in flight.
func (s *Service) Confirm(ctx context.Context, sess Session, ip, quoteID, invoice string) (ConfirmResult, error) {
	if !s.cfg.Enabled {
		return ConfirmResult{}, errDisabled()
	}
	now := s.now()
	var q Quote
	var found bool
	if err := s.db.View(func(txn *kv.Txn) (err error) { q, found, err = getQuote(txn, quoteID); return }); err != nil {
		return ConfirmResult{}, err
	}
	if found && q.PubKey == sess.PubKey && q.State == QuoteUsed {
		return s.confirmedBefore(q)
	}
	if err := s.checkQuote(q, found, sess.PubKey, now); err != nil {
		return ConfirmResult{}, err
	}
	if err := s.checkNPubClaim(ctx, sess, q); err != nil {
		return ConfirmResult{}, err
	}
	inv, err := s.claimInvoice(q, invoice, now)
	if err != nil {
		return ConfirmResult{}, err
	}
	if err := s.checkBalance(q.AmountSats); err != nil {
		return ConfirmResult{}, err
	}
	c := Claim{ID: newID("c_"), QuoteID: q.ID, PubKey: sess.PubKey, Method: q.Method, Destination: q.Destination, AmountSats: q.AmountSats, Nutzap: q.Nutzap,
		FeeReserveSats: s.cfg.MaxFeeSats, State: ClaimPaying, IPHash: s.ipHash(ip), Day: day(now), Run: s.run,
		CreatedAt: now.Unix(), NextClaimAt: now.Add(s.cfg.Cooldown).Unix()}
	// Held before it is written, until the call is done with it: the
	// background job settles a paying claim only once no call is paying it.
	s.paying.take(c.ID)
	defer s.paying.drop(c.ID)
	if err := s.takeClaim(&c, now); err != nil {
		return ConfirmResult{}, err
	}
	s.log.Info("faucet claim confirmed", "claim", c.ID, "pubkey", c.PubKey, "method", c.Method, "amount_sats", c.AmountSats)

	// The request may go away; the payment and its record may not.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return s.pay(pctx, c, inv)
}

// confirmedBefore answers a confirm of a quote whose claim was taken
// before, as the first confirm was answered, so that a client that lost the
// answer (a cut connection, a crash) may simply repeat it: paid or pending
// with its result (a token payout's token again: the same ecash, not a
// second payment), failed with payment_failed. Nothing is paid here. A
// claim still being paid is 409 quote_already_used, as for concurrent
// confirms.
func (s *Service) confirmedBefore(q Quote) (ConfirmResult, error) {
	c, err := s.claimByID(q.ClaimID)
	if err != nil {
		return ConfirmResult{}, err
	}
	switch c.State {
	case ClaimPaid, ClaimPending:
		return c.result(c.Token), nil
	case ClaimFailed:
		return ConfirmResult{}, outpost.Errorf(outpost.BadGateway, "payment_failed",
			"this quote's claim failed (%s); nothing was paid, your cooldown and the budget were released: ask for a new quote", c.Reason).
			With("claim_id", c.ID).With("status", ClaimFailed)
	}
	return ConfirmResult{}, outpost.Errorf(outpost.Conflict, "quote_already_used",
		"this quote was already confirmed and its payment is under way; GET /claims/%s tells how it ends", q.ID).
		With("claim_id", q.ClaimID).With("status", ClaimPending)
}

// checkNPubClaim: an npub session may only claim to its profile's lud16.
func (s *Service) checkNPubClaim(ctx context.Context, sess Session, q Quote) error {
	if sess.Method != LoginNPub {
		return nil
	}
	u, err := s.User(ctx, sess.PubKey)
	if err != nil {
		return err
	}
	if q.Method != MethodLightningAddress || !strings.EqualFold(q.Destination, u.LUD16()) {
		return errNPub
	}
	return nil
}

// claimInvoice is the invoice a bolt11 quote is confirmed with, checked
// against the quote; other quotes take none.
func (s *Service) claimInvoice(q Quote, invoice string, now time.Time) (bolt11.Invoice, error) {
	switch {
	case q.Method == MethodBolt11 && invoice == "":
		return bolt11.Invoice{}, outpost.Errorf(outpost.Invalid, "invalid_request", "bolt11 is required for a bolt11 quote").With("field", "bolt11")
	case q.Method != MethodBolt11 && invoice != "":
		return bolt11.Invoice{}, outpost.Errorf(outpost.Invalid, "invalid_request", "bolt11 is only for bolt11 quotes").With("field", "bolt11")
	case q.Method != MethodBolt11:
		return bolt11.Invoice{}, nil
	}
	inv, err := bolt11.Decode(invoice)
	if err != nil {
		return bolt11.Invoice{}, err
	}
	return inv, inv.Check(s.cfg.Network, q.AmountSats, now)
}

// takeClaim records claim c (its ID set) in the transaction that uses its
// quote and takes its reservations, after checking both again.
func (s *Service) takeClaim(c *Claim, now time.Time) error {
	return s.db.Update(func(txn *kv.Txn) error {
		q, found, err := getQuote(txn, c.QuoteID)
		if err != nil {
			return err
		}
		if err := s.checkQuote(q, found, c.PubKey, now); err != nil {
			return err
		}
		l, err := s.readLimits(txn, c.PubKey, c.IPHash, now)
		if err != nil {
			return err
		}
		if err := s.check(l, q.AmountSats, now); err != nil {
			return err
		}
		q.State, q.ClaimID = QuoteUsed, c.ID
		if err := s.putQuote(txn, q); err != nil {
			return err
		}
		if err := s.reserve(txn, l, c, now); err != nil {
			return err
		}
		if err := s.putClaim(txn, *c); err != nil {
			return err
		}
		if err := txn.Set(key(kindClaimTime, string(kv.U64(uint64(now.Unix()))), c.ID), []byte(c.ID)); err != nil {
			return err
		}
		return txn.Set(key(kindUnsettled, c.ID), []byte(c.ID))
	})
}

func (s *Service) putClaim(txn *kv.Txn, c Claim) error {
	return kv.PutJSON(txn, key(kindClaim, c.ID), c)
}

// paymentError is the error answer for a claim that definitely failed.
func paymentError(c Claim, err error) error {
	e := outpost.AsError(err)
	if e == nil || e.Kind == outpost.Internal {
		e = outpost.Errorf(outpost.BadGateway, "payment_failed", "the payment failed; your cooldown and the budget were released, ask for a new quote")
	}
	return e.With("claim_id", c.ID).With("status", ClaimFailed)
}

func (s *Service) pay(ctx context.Context, c Claim, inv bolt11.Invoice) (ConfirmResult, error) {
	switch c.Method {
	case MethodCashu:
		tok, err := s.tr.SendToken(ctx, c.ID, c.AmountSats, s.cfg.MinBalanceSats)
		if err != nil { // tok.FeeSats: what the attempt cost nonetheless
			return ConfirmResult{}, paymentError(c, s.failCost(c, err, tok.FeeSats))
		}
		c.Token = tok.Token
		c, err = s.settle(c, ClaimPaid, treasury.Payment{State: treasury.Paid, FeeSats: tok.FeeSats})
		if err != nil {
			// Unrecorded, the claim is settled by the background job
			// once this call is done, by taking the token back (it was
			// never redeemed): it is not handed out rather than paid twice.
			s.log.Error("faucet claim: token made but not recorded; withheld", "claim", c.ID, "err", err)
			return ConfirmResult{}, err
		}
		return c.result(tok.Token), nil
	case MethodNutzap:
		return s.payNutzap(ctx, c)
	case MethodLightningAddress:
		a, err := lnurl.ParseAddress(c.Destination)
		if err == nil {
			var p lnurl.PayParams
			if p, err = s.cfg.LNURL.Resolve(ctx, a); err == nil {
				inv, err = s.cfg.LNURL.Invoice(ctx, a, p, c.AmountSats, s.cfg.Network, s.now())
			}
		}
		if err != nil {
			return ConfirmResult{}, paymentError(c, s.fail(c, err))
		}
	}
	return s.melt(ctx, c, inv)
}

// melt pays inv through the mint. The melt quote is recorded in the claim
// before the mint is asked to pay it.
func (s *Service) melt(ctx context.Context, c Claim, inv bolt11.Invoice) (ConfirmResult, error) {
	mq, err := s.tr.MeltQuote(ctx, inv.Raw)
	if err != nil {
		return ConfirmResult{}, paymentError(c, s.fail(c, err))
	}
	if mq.AmountSats != c.AmountSats {
		return ConfirmResult{}, paymentError(c, s.fail(c, outpost.Errorf(outpost.BadGateway, "payment_failed", "the mint quoted %d sats for a %d-sat claim", mq.AmountSats, c.AmountSats)))
	}
	if mq.FeeReserveSats > s.cfg.MaxFeeSats {
		return ConfirmResult{}, paymentError(c, s.fail(c, outpost.Errorf(outpost.BadGateway, "payment_failed",
			"paying this invoice would cost up to %d sats in fees; the faucet pays at most %d", mq.FeeReserveSats, s.cfg.MaxFeeSats)))
	}
	c.MeltQuote, c.Bolt11, c.PaymentHash, c.AttemptedAt = &mq, inv.Raw, inv.PaymentHash, s.now().Unix()
	if err := s.db.Update(func(txn *kv.Txn) error { return s.putClaim(txn, c) }); err != nil {
		return ConfirmResult{}, paymentError(c, s.fail(c, err))
	}
	p, err := s.tr.Melt(ctx, mq, s.cfg.MinBalanceSats)
	if err != nil { // nothing was attempted; preparing it may have cost fees
		return ConfirmResult{}, paymentError(c, s.failCost(c, err, p.FeeSats))
	}
	switch p.State {
	case treasury.Paid:
		c, err = s.settle(c, ClaimPaid, p)
		return c.result(""), err
	case treasury.Pending:
		c, err = s.settle(c, ClaimPending, p)
		return c.result(""), err
	default:
		return ConfirmResult{}, paymentError(c, s.failCost(c, outpost.Errorf(outpost.BadGateway, "payment_failed",
			"the Lightning payment failed (%s); your cooldown and the budget were released, ask for a new quote", p.Reason), p.FeeSats))
	}
}

// settle records a paid or pending outcome: even while the disk is low
// (kv.DB.Record), since the money has moved.
func (s *Service) settle(c Claim, state string, p treasury.Payment) (Claim, error) {
	now := s.now()
	var changed bool
	err := s.db.Record(func(txn *kv.Txn) error {
		cur, found, err := getClaim(txn, c.ID)
		if err != nil {
			return err
		}
		if found && (cur.State == ClaimPaid || cur.State == ClaimFailed) {
			c, changed = cur, false // the background job got there first
			return nil
		}
		if found {
			cur.Token = cmp.Or(cur.Token, c.Token) // a token payout's, recorded with its paid state
			c = cur
		}
		changed = c.State != state
		c.State, c.Unsure = state, p.Unsure
		if state == ClaimPending {
			return s.putClaim(txn, c)
		}
		c.Preimage, c.FeeSats, c.PaidAt, c.Reason = p.Preimage, p.FeeSats, now.Unix(), ""
		if err := s.adjustBudget(txn, &c, c.FeeSats-c.FeeReserveSats); err != nil {
			return err
		}
		if err := s.addTotals(txn, func(t *totals) {
			t.PaidSats += c.AmountSats
			t.FeeSats += c.FeeSats
			t.Claims++
		}); err != nil {
			return err
		}
		if err := txn.Delete(key(kindUnsettled, c.ID)); err != nil {
			return err
		}
		return s.putClaim(txn, c)
	})
	if err == nil {
		s.log.Info("faucet claim settled", "claim", c.ID, "state", c.State, "amount_sats", c.AmountSats, "fee_sats", c.FeeSats)
		if changed {
			s.claimed(c)
		}
	}
	return c, err
}

// fail records a definite failure, releases the reservations and returns
// cause (for the answer).
func (s *Service) fail(c Claim, cause error) error { return s.failCost(c, cause, 0) }

// failCost is fail for an attempt that cost feeSats (fees of ecash made and
// taken back): they count as fees spent, though the claim was not paid. It
// is recorded even while the disk is low (kv.DB.Record): the claim must not
// stay "paying", holding its reservations, until the next start.
func (s *Service) failCost(c Claim, cause error, feeSats int64) error {
	reason := "payment failed"
	if e := outpost.AsError(cause); e != nil && e.Kind != outpost.Internal {
		reason = e.Message
	}
	var changed bool
	err := s.db.Record(func(txn *kv.Txn) error {
		cur, found, err := getClaim(txn, c.ID)
		if err != nil {
			return err
		}
		if found && (cur.State == ClaimPaid || cur.State == ClaimFailed) {
			changed = false
			return nil
		}
		if found {
			c = cur
		}
		changed = true
		c.State, c.Reason, c.NextClaimAt, c.FeeSats = ClaimFailed, reason, 0, feeSats
		if err := s.release(txn, &c); err != nil {
			return err
		}
		if err := s.giveBack(txn, c); err != nil {
			return err
		}
		if feeSats > 0 {
			if err := s.addTotals(txn, func(t *totals) { t.FeeSats += feeSats }); err != nil {
				return err
			}
		}
		if err := txn.Delete(key(kindUnsettled, c.ID)); err != nil {
			return err
		}
		return s.putClaim(txn, c)
	})
	if err != nil {
		s.log.Error("faucet claim: could not record a failure", "claim", c.ID, "err", err)
	} else {
		s.log.Info("faucet claim failed", "claim", c.ID, "reason", reason, "cause", cause)
		if changed {
			s.claimed(c)
		}
	}
	return cause
}

// giveBack opens a failed claim's quote again, in the transaction that
// records the failure, while it is unexpired and still the user's current
// quote: nothing was paid, so the quote is not used up — a repeated
// confirm claims again (and a quote request returns it, amount unchanged).
// This is what becomes of a confirm cut by a crash before it paid. A quote
// past its time stays used, and its claim's answer says failed.
func (s *Service) giveBack(txn *kv.Txn, c Claim) error {
	q, found, err := getQuote(txn, c.QuoteID)
	if err != nil || !found || q.State != QuoteUsed || q.ClaimID != c.ID || s.now().Unix() >= q.ExpiresAt {
		return err
	}
	item, err := txn.Get(key(kindOpenQuote, q.PubKey))
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if current, err := item.ValueCopy(nil); err != nil || string(current) != q.ID {
		return err // a newer quote replaced it
	}
	q.State = QuoteOpen
	return s.putQuote(txn, q)
}

// claimed tells OnClaim that c reached its state.
func (s *Service) claimed(c Claim) {
	if s.cfg.OnClaim != nil {
		s.cfg.OnClaim(c.Method, c.State)
	}
}
