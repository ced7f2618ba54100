package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	decodepay "github.com/nbd-wtf/ln-decodepay"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Round steps: each is written before it is tried.
const (
	stepQuote = "quote" // ask the payee for a mint quote
	stepMelt  = "melt"  // the payer's melt quote is recorded: melt it (or settle the melt)
	stepWait  = "wait"  // the melt paid: wait for the payee to see it, then mint
	stepDone  = "done"
)

// Outcomes, and the roles a failure is laid on.
const (
	OutcomePending = "pending"
	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"

	RolePayer = "payer"
	RolePayee = "payee"
)

// Round is one audit: the payer melts ecash to pay the payee's mint quote.
type Round struct {
	ID         string `json:"id"`
	Payer      string `json:"payer"`
	Payee      string `json:"payee"`
	Amount     uint64 `json:"amount_sats"`
	Step       string `json:"step"`
	Outcome    string `json:"outcome"`
	Fault      string `json:"fault,omitempty"` // the role that failed; "" when the round was cut short by us
	Error      string `json:"error,omitempty"`
	MintQuote  string `json:"mint_quote,omitempty"`
	Invoice    string `json:"invoice,omitempty"`
	MeltQuote  string `json:"melt_quote,omitempty"`
	FeeReserve uint64 `json:"fee_reserve_sats"`
	Fee        uint64 `json:"fee_sats"`
	// FeeExcess is what the payer took over its quoted fee reserve (beyond
	// its input fees): booked lost to it, and the payer flagged.
	FeeExcess uint64 `json:"fee_excess_sats,omitempty"`
	// Preimage is what the payer gave as proof of payment ("" for none).
	Preimage string `json:"preimage,omitempty"`
	Started  int64  `json:"started_ms"`
	MeltSent int64  `json:"melt_sent_ms,omitempty"`
	PayMs    int64  `json:"pay_ms,omitempty"`   // the melt request until the payer said paid
	PayeeMs  int64  `json:"payee_ms,omitempty"` // the melt request until the payee minted
	// Late: the round failed but is still followed. At step wait, the
	// payee was paid but has not minted (its amount booked lost); the quote
	// is still tried, so a payee that mints late gives the sats back. At
	// step melt, the payer's melt stayed pending (its sats in flight); it
	// is still asked about (melted).
	Late bool `json:"late,omitempty"`
}

func (r Round) paidNotMinted() bool { return r.Step == stepWait && r.Outcome == OutcomePending }

func roundKey(id string) []byte { return kv.Key(kv.PrefixAudit, kindRound, []byte(id)) }
func openKey(id string) []byte  { return kv.Key(kv.PrefixAudit, kindOpenRound, []byte(id)) }

// eachOpenRound calls fn with every round not settled yet.
func (a *Auditor) eachOpenRound(txn *kv.Txn, fn func(Round)) error {
	it := txn.NewIterator(kv.IteratorOptions{Prefix: kv.Key(kv.PrefixAudit, kindOpenRound)})
	defer it.Close()
	prefix := kv.Key(kv.PrefixAudit, kindOpenRound)
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		var r Round
		found, err := kv.GetJSON(txn, roundKey(string(it.Item().Key()[len(prefix):])), &r)
		if err != nil {
			return err
		}
		if found {
			fn(r)
		}
	}
	return nil
}

// save writes r (and its per-mint entries), with change to the ledger, in
// one transaction.
func (a *Auditor) save(r *Round, change func(*ledger)) error {
	return a.db.Record(func(txn *kv.Txn) error {
		if err := kv.PutJSON(txn, roundKey(r.ID), r); err != nil {
			return err
		}
		if err := a.putEntries(txn, *r); err != nil {
			return err
		}
		var err error
		if r.Outcome == OutcomePending || r.Late {
			err = txn.Set(openKey(r.ID), nil)
		} else {
			err = txn.Delete(openKey(r.ID))
		}
		if err != nil || change == nil {
			return err
		}
		return a.updateLedger(txn, change, func() error { return nil })
	})
}

// fail settles r as failed, laid on role ("" for neither mint).
func (a *Auditor) fail(r *Round, role string, err error, change func(*ledger)) error {
	r.Outcome, r.Fault, r.Error = OutcomeFailed, role, errText(err)
	if !r.Late {
		r.Step = stepDone
	}
	if err := a.save(r, change); err != nil {
		return err
	}
	if mint := map[string]string{RolePayer: r.Payer, RolePayee: r.Payee}[role]; mint != "" && a.cfg.OnFailure != nil {
		a.cfg.OnFailure(mint, a.now(), fmt.Sprintf("failed its audit as %s: %s", role, r.Error))
	}
	return nil
}

func errText(err error) string {
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// ErrNoPair: no two mints can be audited now.
var ErrNoPair = errors.New("audit: no pair of mints to audit (fund at least two, with room at the payee)")

// RunRound picks a pair by need and audits it.
func (a *Auditor) RunRound(ctx context.Context) (Round, error) {
	a.round.Lock()
	defer a.round.Unlock()
	payer, payee, amount, err := a.pick()
	if err != nil {
		return Round{}, err
	}
	return a.audit(ctx, payer, payee, amount)
}

// Audit runs one round: payer pays amount sats to payee.
func (a *Auditor) Audit(ctx context.Context, payer, payee string, amount uint64) (Round, error) {
	a.round.Lock()
	defer a.round.Unlock()
	return a.audit(ctx, payer, payee, amount)
}

func (a *Auditor) audit(ctx context.Context, payer, payee string, amount uint64) (Round, error) {
	if a.withdrawn(payee) {
		return Round{}, outpost.Errorf(outpost.Unprocessable, "withdrawn", "the audit wallet sends no more sats to this mint")
	}
	r, err := a.begin(payer, payee, amount)
	if err != nil {
		return r, err
	}
	return r, a.advance(ctx, &r)
}

// begin checks the payee has room for amount and writes the round, with
// deposits held off meanwhile, so the two cannot both fit under the cap.
func (a *Auditor) begin(payer, payee string, amount uint64) (Round, error) {
	a.funding.Lock()
	defer a.funding.Unlock()
	if err := a.checkRoom(payee, amount); err != nil {
		return Round{}, err
	}
	r := Round{ID: fmt.Sprintf("%016x%s", a.now().UnixMilli(), newID()[:8]), Payer: payer, Payee: payee, Amount: amount,
		Step: stepQuote, Outcome: OutcomePending, Started: a.now().UnixMilli()}
	if err := a.db.Record(func(txn *kv.Txn) error {
		return kv.PutJSON(txn, kv.Key(kv.PrefixAudit, kindLast), [2]string{payer, payee})
	}); err != nil {
		return r, err
	}
	return r, a.save(&r, nil)
}

// advance takes r from its recorded step to the end, or as far as the mints
// let it go now.
func (a *Auditor) advance(ctx context.Context, r *Round) error {
	for r.Outcome == OutcomePending || r.Late {
		before := *r
		var err error
		switch r.Step {
		case stepQuote:
			err = a.quote(ctx, r)
		case stepMelt:
			err = a.melt(ctx, r)
		case stepWait:
			err = a.wait(ctx, r)
		default:
			return nil
		}
		if err != nil || *r == before {
			return err // left for a later resume
		}
	}
	return nil
}

// quote asks the payee for a mint quote and the payer for a melt quote of
// its invoice. Nothing has moved yet: a failure is only recorded.
func (a *Auditor) quote(ctx context.Context, r *Round) error {
	payee, err := a.wallet(r.Payee)
	if err != nil {
		return err
	}
	payer, err := a.wallet(r.Payer)
	if err != nil {
		return err
	}
	cctx, cancel := a.ctx(ctx)
	defer cancel()
	mq, err := payee.RequestMint(cctx, r.Amount)
	if err != nil {
		return a.fail(r, RolePayee, fmt.Errorf("mint quote: %w", err), nil)
	}
	r.MintQuote, r.Invoice = mq.Quote, mq.Request
	q, err := payer.MeltQuote(cctx, mq.Request)
	switch {
	case err != nil:
		return a.fail(r, RolePayer, fmt.Errorf("melt quote: %w", err), nil)
	case q.Amount != r.Amount:
		return a.fail(r, RolePayer, fmt.Errorf("melt quote: %d sats quoted for an invoice of %d", q.Amount, r.Amount), nil)
	case payer.Balance() < q.Amount+q.FeeReserve:
		return a.fail(r, "", fmt.Errorf("the payer holds %d sats, the melt needs %d", payer.Balance(), q.Amount+q.FeeReserve), nil)
	}
	r.MeltQuote, r.FeeReserve, r.Step = q.Quote, q.FeeReserve, stepMelt
	return a.save(r, nil)
}

// melt melts the payer's quote, or settles a melt a crash left: the wallet
// wrote its operation before the request left, so a melt it has no
// operation for was never sent.
func (a *Auditor) melt(ctx context.Context, r *Round) error {
	payer, err := a.wallet(r.Payer)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 4*a.cfg.Timeout)
	defer cancel()
	var p ecash.Payment
	quarantined := payer.Holdings().Quarantined
	if r.MeltSent == 0 {
		r.MeltSent = a.now().UnixMilli()
		if err := a.save(r, nil); err != nil {
			return err
		}
		p, err = payer.Melt(cctx, ecash.MeltQuote{Quote: r.MeltQuote, Request: r.Invoice, Amount: r.Amount, FeeReserve: r.FeeReserve}, 0)
		if err == nil {
			return a.melted(r, p)
		}
	}
	op, found, oerr := payer.Operation(r.MeltQuote)
	switch {
	case oerr != nil:
		return oerr
	case !found || op.Kind != "melt":
		refused := ecash.ProblemOf(err) == ecash.Refused || payer.Holdings().Quarantined > quarantined
		return a.notSent(cctx, r, payer, p, err, refused)
	}
	if p, err = payer.MeltStatus(cctx, r.MeltQuote); err != nil {
		return err // the payer's state is unknown: left pending
	}
	return a.melted(r, p)
}

// notSent settles a round whose melt the wallet has no operation for: it
// was never sent, and is not to be sent now. That is no mint's failure
// (our own funds, or a crash) unless the payer refused the wallet's own
// proofs on the way (refused: the melt's, or those of the swap that makes
// its inputs): then it is the payer's, flagged at once with what it
// refused.
func (a *Auditor) notSent(ctx context.Context, r *Round, payer *ecash.Wallet, p ecash.Payment, err error, refused bool) error {
	// Preparing its inputs may have cost a swap's fee, which the wallet
	// tells once that swap is settled.
	ps, serr := payer.MeltStatus(ctx, r.MeltQuote)
	if serr != nil || ps.State == ecash.Pending {
		return serr
	}
	if err == nil {
		err = errors.New("cut short before the melt was sent")
	}
	fee := max(p.Fee, ps.Fee)
	if !refused {
		return a.fail(r, "", err, func(l *ledger) { l.FeesPaidSats += fee })
	}
	if err := a.fail(r, RolePayer, fmt.Errorf("the payer refused the audit wallet's proofs: %w", err), func(l *ledger) { l.FeesPaidSats += fee }); err != nil {
		return err
	}
	return a.checkHolding(ctx, r.Payer)
}

// melted records a melt's outcome. A melt still pending after PayeeWait
// fails the round on the payer at once (a mint that takes melts and never
// pays must not keep a clean record while it holds them), its sats in
// flight; the round stays Late and the melt is asked about at every
// resume: paid after all, the round goes on to the payee and is judged
// again; failed, the sats are the wallet's again (or lost, if the mint
// spent them).
func (a *Auditor) melted(r *Round, p ecash.Payment) error {
	fee := func(l *ledger) { l.FeesPaidSats += p.Fee }
	switch p.State {
	case ecash.Paid:
		r.Fee, r.PayMs, r.Step, r.Preimage = p.Fee, a.now().UnixMilli()-r.MeltSent, stepWait, p.Preimage
		if r.Late {
			r.Outcome, r.Fault, r.Error, r.Late = OutcomePending, "", "", false
		}
		return a.paid(r, p)
	case ecash.Unpaid:
		r.Late = false
		return a.fail(r, RolePayer, fmt.Errorf("the melt failed: %s", p.Reason), fee)
	}
	if !r.Late && a.now().UnixMilli()-r.MeltSent > a.cfg.PayeeWait.Milliseconds() {
		r.Late = true
		return a.fail(r, RolePayer, fmt.Errorf("the melt is still pending after %v: the payer holds the sats and has not paid", a.cfg.PayeeWait), nil)
	}
	return nil
}

// paid records a paid melt, with what the payer took over its quoted fee
// reserve: the Lightning fee is what the melt cost less the input fees
// (NUT-02) of its inputs and of the swap that made them. An excess is
// booked lost to the payer (not a fee) and flags it; the round goes on to
// the payee and fails on the payer at the end (minted).
func (a *Auditor) paid(r *Round, p ecash.Payment) error {
	w, err := a.wallet(r.Payer)
	if err != nil {
		return err
	}
	in, err := inputFees(w, r.MeltQuote)
	if err != nil {
		return err
	}
	r.FeeExcess = p.Fee - min(p.Fee, in+r.FeeReserve)
	excess := r.FeeExcess
	if err := a.save(r, func(l *ledger) { l.FeesPaidSats += p.Fee - excess; l.LostSats += excess }); err != nil || excess == 0 {
		return err
	}
	return a.putFlag(r.Payer, fmt.Sprintf("the mint took %d sats over the fee reserve of %d it quoted for a melt", excess, r.FeeReserve), excess)
}

// inputFees is what input fees took of the melt of quote: those of its
// inputs and of the swap that made them exact.
func inputFees(w *ecash.Wallet, quote string) (uint64, error) {
	op, found, err := w.Operation(quote)
	if err != nil || !found {
		return 0, err
	}
	ppk := map[string]uint64{}
	for _, k := range w.Keysets() {
		ppk[k.ID] = k.InputFeePpk
	}
	var sum uint64
	for _, p := range op.Inputs {
		sum += ppk[p.Id]
	}
	fee := (sum + 999) / 1000
	split, found, err := w.Operation("split:" + quote)
	if found {
		fee += split.Fee
	}
	return fee, err
}

// wait mints the payee's quote once it sees the payment. A payee that has
// not seen it after PayeeWait fails the round, its amount booked lost; it is
// still tried later (Late), and what it mints then is booked recovered.
func (a *Auditor) wait(ctx context.Context, r *Round) error {
	payee, err := a.wallet(r.Payee)
	if err != nil {
		return err
	}
	deadline := time.UnixMilli(r.MeltSent + r.PayMs).Add(a.cfg.PayeeWait) // from the payment: a late payer is not the payee's fault
	for {
		cctx, cancel := a.ctx(ctx)
		st, err := payee.CompleteMint(cctx, r.MintQuote)
		cancel()
		switch {
		case err == nil && st == ecash.MintIssued:
			return a.minted(r)
		case err == nil && st == ecash.MintLost:
			r.Late, r.Step = false, stepDone
			return a.lost(r, errors.New("the payee issued the quote's ecash to someone else"))
		case r.Late && a.now().Sub(time.UnixMilli(r.MeltSent)) > lateFor:
			r.Late = false // given up: it stays failed and lost
			return a.save(r, nil)
		case r.Late:
			return nil // tried again at the next resume
		case !a.now().Before(deadline):
			if err == nil {
				err = fmt.Errorf("the payee did not see the payment within %v", a.cfg.PayeeWait)
			}
			r.Late = true
			if !r.proven() { // the payer said paid and cannot show it
				return a.fail(r, RolePayer, fmt.Errorf("the payer gave no preimage of the invoice and the payee never saw the payment: %w", err),
					func(l *ledger) { l.LostSats += r.Amount })
			}
			return a.lost(r, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(a.pollEvery()):
		}
	}
}

// proven: the payer's preimage is the invoice's, so it paid it; a payee
// that did not see the payment is then to blame, otherwise the payer.
func (r Round) proven() bool {
	inv, err := decodepay.Decodepay(r.Invoice)
	b, herr := hex.DecodeString(r.Preimage)
	if err != nil || herr != nil {
		return false
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]) == inv.PaymentHash
}

// lateFor is how long a payee that was paid and did not mint is still
// asked to.
const lateFor = 7 * 24 * time.Hour

func (a *Auditor) pollEvery() time.Duration { return min(a.cfg.PayeeWait/20, time.Second) }

func (a *Auditor) lost(r *Round, err error) error {
	return a.fail(r, RolePayee, err, func(l *ledger) { l.LostSats += r.Amount })
}

func (a *Auditor) minted(r *Round) error {
	late := r.Late
	r.PayeeMs = a.now().UnixMilli() - r.MeltSent
	r.Step, r.Late = stepDone, false
	if late { // failed already; the sats came back
		return a.save(r, func(l *ledger) { l.RecoveredSats += r.Amount })
	}
	if r.FeeExcess > 0 { // the payee did its part; the payer overcharged
		return a.fail(r, RolePayer, fmt.Errorf("the payer took %d sats over its fee reserve of %d", r.FeeExcess, r.FeeReserve), nil)
	}
	r.Outcome = OutcomeOK
	return a.save(r, nil)
}

// Resume finishes what a crash or a slow mint left: open rounds, deposits,
// and the wallets' own operations.
func (a *Auditor) Resume(ctx context.Context) error {
	a.round.Lock()
	defer a.round.Unlock()
	mints, err := a.Mints()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mints {
		w, err := a.wallet(m)
		if err == nil {
			cctx, cancel := a.ctx(ctx)
			_, err = w.Recover(cctx)
			cancel()
		}
		errs = append(errs, err)
	}
	errs = append(errs, a.SettleDeposits(ctx))
	var open []Round
	if err := a.db.View(func(txn *kv.Txn) error {
		return a.eachOpenRound(txn, func(r Round) { open = append(open, r) })
	}); err != nil {
		return err
	}
	for i := range open {
		errs = append(errs, a.advance(ctx, &open[i]))
	}
	return errors.Join(errs...)
}

// pick chooses a pair by need: the payee is the mint with the least held
// (and room for the amount), the payer the one with the most that can pay
// it; never the two mints of the round before, in either role, while
// another pair can go. By need alone, two mints could pay each other back
// and forth and leave a third unaudited for many rounds.
func (a *Auditor) pick() (payer, payee string, amount uint64, err error) {
	amount = uint64(a.cfg.MinSats + rand.Int64N(a.cfg.MaxSats-a.cfg.MinSats+1))
	mints, err := a.Mints()
	if err != nil {
		return "", "", 0, err
	}
	var last [2]string
	if err := a.db.View(func(txn *kv.Txn) error {
		_, err := kv.GetJSON(txn, kv.Key(kv.PrefixAudit, kindLast), &last)
		return err
	}); err != nil {
		return "", "", 0, err
	}
	busy, err := a.melting()
	if err != nil {
		return "", "", 0, err
	}
	held := map[string]uint64{}
	for _, m := range mints {
		w, err := a.wallet(m)
		if err != nil {
			return "", "", 0, err
		}
		held[m] = w.Balance()
	}
	best, repeat := -1, -1 // the best pair, and the best of the last round's two
	for _, ee := range mints {
		if room, err := a.room(ee); err != nil || room < int64(amount) || a.withdrawn(ee) {
			continue
		}
		for _, er := range mints {
			if er == ee || held[er] < amount || [2]string{er, ee} == last || busy[er] {
				continue
			}
			// need: the payer's surplus over the payee's; a withdrawn
			// payer first, to move its sats out.
			need := int(held[er]) - int(held[ee])
			if a.withdrawn(er) {
				need += 1 << 40
			}
			if [2]string{ee, er} == last {
				repeat = max(repeat, need) // only if no other pair can go
			} else if need > best {
				best, payer, payee = need, er, ee
			}
		}
	}
	switch {
	case best >= 0:
		return payer, payee, amount, nil
	case repeat >= 0:
		return last[1], last[0], amount, nil
	}
	return "", "", 0, ErrNoPair
}

// melting are the mints with a melt of a round still pending: none is
// asked to pay again meanwhile, so a mint that takes melts and never pays
// holds at most one round's sats.
func (a *Auditor) melting() (map[string]bool, error) {
	busy := map[string]bool{}
	err := a.db.View(func(txn *kv.Txn) error {
		return a.eachOpenRound(txn, func(r Round) {
			if r.Step == stepMelt {
				busy[r.Payer] = true
			}
		})
	})
	return busy, err
}

// Run runs a round every Interval (after resuming) until ctx ends. A panic
// in a round is logged and the loop goes on: one bad mint answer must not
// stop the audits.
func (a *Auditor) Run(ctx context.Context) {
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		a.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Auditor) tick(ctx context.Context) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("audit: a round panicked", "panic", p)
		}
	}()
	if err := a.Resume(ctx); err != nil {
		a.log.Info("audit: resume", "err", err)
	}
	if err := a.CheckHoldings(ctx); err != nil {
		a.log.Info("audit: holdings check", "err", err)
	}
	r, err := a.RunRound(ctx)
	if err != nil && !errors.Is(err, ErrNoPair) {
		a.log.Warn("audit: round", "err", err)
	}
	if r.ID != "" {
		a.log.Info("audit: round", "payer", r.Payer, "payee", r.Payee, "sats", r.Amount, "outcome", r.Outcome, "fault", r.Fault, "error", r.Error)
	}
}
