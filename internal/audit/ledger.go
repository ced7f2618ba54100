package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Records under kv.PrefixAudit.
const (
	kindLedger    byte = 0x01 // → ledger
	kindMint      byte = 0x02 // mint URL → mintRecord: the mints the wallet was funded at
	kindDeposit   byte = 0x03 // deposit id → Deposit
	kindRound     byte = 0x04 // round id → Round
	kindOpenRound byte = 0x05 // round id → "": rounds not settled yet
	kindEntry     byte = 0x06 // mint ns + inverted time + round id + role → Entry (records.go)
	kindLast      byte = 0x07 // → [payer, payee] of the newest round
	kindFlag      byte = 0x08 // mint URL → Flag (holdings.go)
)

// ledger is what the audit wallet's books hold beyond what the wallets
// hold: every sat that came in, and every sat that went out of them.
type ledger struct {
	DepositedSats uint64 `json:"deposited_sats"`
	FeesPaidSats  uint64 `json:"fees_paid_sats"` // melts' Lightning and input fees, receive fees
	LostSats      uint64 `json:"lost_sats"`      // paid to a payee that never minted it
	RecoveredSats uint64 `json:"recovered_sats"` // of LostSats, minted after all (a late payee)
}

type mintRecord struct {
	URL   string `json:"url"`
	Added int64  `json:"added"`
}

// Deposit states.
const (
	DepositUnpaid  = "unpaid"  // a quote's invoice not paid yet
	DepositPending = "pending" // a token being swapped in
	DepositDone    = "done"
	DepositFailed  = "failed"
)

// Deposit is sats put into the audit wallet at one mint: an invoice of a
// mint quote, or a token.
type Deposit struct {
	ID       string `json:"id"`
	MintURL  string `json:"mint_url"`
	Quote    string `json:"quote,omitempty"`
	Invoice  string `json:"invoice,omitempty"`
	Amount   uint64 `json:"amount"` // asked for, or the token's
	State    string `json:"state"`
	Received uint64 `json:"received_sats"` // what became the wallet's (after fees)
	Fee      uint64 `json:"fee_sats"`
	Created  int64  `json:"created_at"`
	Expiry   int64  `json:"expiry,omitempty"` // the quote's, Unix time; 0 when the mint gave none
	Error    string `json:"error,omitempty"`
}

// quoteGrace is how long past its expiry an unpaid deposit quote is still
// asked about (an invoice paid just in time), and how long one without an
// expiry is.
const quoteGrace = 24 * time.Hour

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func depositKey(id string) []byte { return kv.Key(kv.PrefixAudit, kindDeposit, []byte(id)) }

// room is how many more sats the wallet may take at mint: the cap less what
// it holds and what deposits and rounds on their way there bring.
func (a *Auditor) room(mint string) (int64, error) {
	h, err := a.holding(mint)
	if err != nil {
		return 0, err
	}
	coming := uint64(0)
	err = a.db.View(func(txn *kv.Txn) error {
		if err := kv.EachJSON(txn, kv.Key(kv.PrefixAudit, kindDeposit), nil, false, func(_ []byte, d Deposit) (bool, error) {
			if d.MintURL == mint && (d.State == DepositUnpaid || d.State == DepositPending) {
				coming += d.Amount
			}
			return true, nil
		}); err != nil {
			return err
		}
		return a.eachOpenRound(txn, func(r Round) {
			if r.Payee == mint && !r.paidNotMinted() { // those are in h.InFlightSats
				coming += r.Amount
			}
		})
	})
	return a.cfg.MaxPerMint - int64(h.HeldSats+h.InFlightSats+coming), err
}

func (a *Auditor) checkRoom(mint string, amount uint64) error {
	room, err := a.room(mint)
	if err != nil {
		return err
	}
	if amount < 1 || int64(amount) > room {
		return outpost.Errorf(outpost.Unprocessable, "over_cap", "the audit wallet may take %d more sats at this mint (--audit-max-per-mint %d)", max(room, 0), a.cfg.MaxPerMint).
			With("room_sats", max(room, 0))
	}
	return nil
}

// DepositQuote asks mint for an invoice of amount sats: once it is paid,
// the sats are the audit wallet's there (Settle mints them).
func (a *Auditor) DepositQuote(ctx context.Context, mint string, amount int64) (Deposit, error) {
	mint, err := normalMint(mint)
	if err != nil {
		return Deposit{}, err
	}
	if amount < 1 {
		return Deposit{}, outpost.Errorf(outpost.Invalid, "invalid_amount", "amount must be a positive number of sats")
	}
	// One deposit at a time, so two cannot both fit under the cap.
	a.funding.Lock()
	defer a.funding.Unlock()
	if err := a.checkRoom(mint, uint64(amount)); err != nil {
		return Deposit{}, err
	}
	w, err := a.wallet(mint)
	if err != nil {
		return Deposit{}, err
	}
	cctx, cancel := a.ctx(ctx)
	defer cancel()
	q, err := w.RequestMint(cctx, uint64(amount))
	if err != nil {
		return Deposit{}, a.mintFailed(mint, err)
	}
	d := Deposit{ID: newID(), MintURL: mint, Quote: q.Quote, Invoice: q.Request, Amount: q.Amount, State: DepositUnpaid, Created: a.now().Unix()}
	if q.Expiry != nil {
		d.Expiry = *q.Expiry
	}
	return d, a.db.Update(func(txn *kv.Txn) error { return a.putDeposit(txn, d) })
}

// putDeposit writes d and lists its mint among the wallet's.
func (a *Auditor) putDeposit(txn *kv.Txn, d Deposit) error {
	if err := kv.PutJSON(txn, depositKey(d.ID), d); err != nil {
		return err
	}
	key := kv.Key(kv.PrefixAudit, kindMint, []byte(d.MintURL))
	found, err := kv.GetJSON(txn, key, &mintRecord{})
	if err != nil || found {
		return err
	}
	return kv.PutJSON(txn, key, mintRecord{URL: d.MintURL, Added: d.Created})
}

// DepositToken swaps a token's ecash into the audit wallet at its mint.
func (a *Auditor) DepositToken(ctx context.Context, token string) (Deposit, error) {
	t, err := ecash.DecodeToken(token)
	if err != nil {
		return Deposit{}, outpost.Errorf(outpost.Invalid, "invalid_token", "not a Cashu token this wallet can read")
	}
	if t.Unit != "" && t.Unit != "sat" {
		return Deposit{}, outpost.Errorf(outpost.Unprocessable, "unsupported_unit", "only sat tokens are taken")
	}
	mint, err := normalMint(t.Mint)
	if err != nil {
		return Deposit{}, err
	}
	a.funding.Lock()
	defer a.funding.Unlock()
	if err := a.checkRoom(mint, t.Proofs.Amount()); err != nil {
		return Deposit{}, err
	}
	w, err := a.wallet(mint)
	if err != nil {
		return Deposit{}, err
	}
	d := Deposit{ID: newID(), MintURL: mint, Amount: t.Proofs.Amount(), State: DepositPending, Created: a.now().Unix()}
	if err := a.db.Update(func(txn *kv.Txn) error { return a.putDeposit(txn, d) }); err != nil {
		return Deposit{}, err
	}
	cctx, cancel := a.ctx(ctx)
	defer cancel()
	_, _, rerr := w.Receive(cctx, "deposit:"+d.ID, t.Proofs)
	d, err = a.settleToken(ctx, d)
	if err == nil && d.State == DepositFailed && rerr != nil {
		err = a.mintFailed(mint, rerr)
	}
	return d, err
}

// settleToken books a token deposit by what its swap came to, as the
// wallet recorded it: a crash between the swap and this is settled the same
// way after a restart.
func (a *Auditor) settleToken(ctx context.Context, d Deposit) (Deposit, error) {
	w, err := a.wallet(d.MintURL)
	if err != nil {
		return d, err
	}
	op, found, err := w.Operation("deposit:" + d.ID)
	if err != nil {
		return d, err
	}
	switch {
	case found && op.State == ecash.OpPending:
		cctx, cancel := a.ctx(ctx)
		defer cancel()
		if _, err := w.Recover(cctx); err != nil {
			a.log.Info("audit: a token deposit is not settled yet", "deposit", d.ID, "err", err)
		}
		if op, _, err = w.Operation("deposit:" + d.ID); err != nil || op.State == ecash.OpPending {
			return d, err
		}
	case !found: // the swap never began
		op = ecash.Op{State: ecash.OpFailed, Reason: "the swap never began"}
	}
	return a.finishDeposit(d.ID, func(d *Deposit, l *ledger) {
		if op.State != ecash.OpDone {
			d.State, d.Error = DepositFailed, op.Reason
			return
		}
		d.State, d.Received, d.Fee = DepositDone, op.Received, op.Fee
		l.DepositedSats += op.Received + op.Lost + op.Fee
		l.FeesPaidSats += op.Fee
	})
}

// finishDeposit settles deposit id, once, with the ledger in one
// transaction.
func (a *Auditor) finishDeposit(id string, fn func(*Deposit, *ledger)) (Deposit, error) {
	var d Deposit
	err := a.db.Record(func(txn *kv.Txn) error {
		if found, err := kv.GetJSON(txn, depositKey(id), &d); err != nil || !found {
			return errors.Join(err, errors.New("audit: no deposit "+id))
		}
		if d.State != DepositUnpaid && d.State != DepositPending {
			return nil // settled already
		}
		return a.updateLedger(txn, func(l *ledger) {
			fn(&d, l)
		}, func() error { return kv.PutJSON(txn, depositKey(id), d) })
	})
	return d, err
}

func (a *Auditor) updateLedger(txn *kv.Txn, fn func(*ledger), also func() error) error {
	var l ledger
	if _, err := kv.GetJSON(txn, kv.Key(kv.PrefixAudit, kindLedger), &l); err != nil {
		return err
	}
	fn(&l)
	if err := kv.PutJSON(txn, kv.Key(kv.PrefixAudit, kindLedger), l); err != nil {
		return err
	}
	return also()
}

// settleQuote mints a paid deposit quote.
func (a *Auditor) settleQuote(ctx context.Context, d Deposit) (Deposit, error) {
	w, err := a.wallet(d.MintURL)
	if err != nil {
		return d, err
	}
	cctx, cancel := a.ctx(ctx)
	defer cancel()
	st, err := w.CompleteMint(cctx, d.Quote)
	if err == nil && st == ecash.MintUnpaid && a.now().Unix() > max(d.Expiry, d.Created)+int64(quoteGrace/time.Second) {
		return a.finishDeposit(d.ID, func(d *Deposit, _ *ledger) { d.State, d.Error = DepositFailed, "the invoice was never paid" })
	}
	if err != nil || st == ecash.MintUnpaid {
		return d, err
	}
	return a.finishDeposit(d.ID, func(d *Deposit, l *ledger) {
		if st == ecash.MintLost {
			d.State, d.Error = DepositFailed, "the mint issued the quote's ecash to someone else"
			return
		}
		d.State, d.Received = DepositDone, d.Amount
		l.DepositedSats += d.Amount
	})
}

// Deposits are the deposits not settled yet, and the newest settled ones.
func (a *Auditor) deposits(open bool) ([]Deposit, error) {
	var out []Deposit
	err := a.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, kv.Key(kv.PrefixAudit, kindDeposit), nil, false, func(_ []byte, d Deposit) (bool, error) {
			if !open || d.State == DepositUnpaid || d.State == DepositPending {
				out = append(out, d)
			}
			return true, nil
		})
	})
	return out, err
}

// SettleDeposits mints the deposit quotes paid since and books token
// deposits a crash left open. It returns the first error.
func (a *Auditor) SettleDeposits(ctx context.Context) error {
	open, err := a.deposits(true)
	if err != nil {
		return err
	}
	var first error
	for _, d := range open {
		var err error
		if d.Quote != "" {
			_, err = a.settleQuote(ctx, d)
		} else {
			_, err = a.settleToken(ctx, d)
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// Deposit reads one deposit, settling it first when its quote was paid.
func (a *Auditor) Deposit(ctx context.Context, id string) (Deposit, error) {
	var d Deposit
	var found bool
	if err := a.db.View(func(txn *kv.Txn) (err error) {
		found, err = kv.GetJSON(txn, depositKey(id), &d)
		return err
	}); err != nil {
		return d, err
	}
	if !found {
		return d, outpost.Errorf(outpost.NotFound, "not_found", "no such deposit")
	}
	if d.State == DepositUnpaid {
		return a.settleQuote(ctx, d)
	}
	return d, nil
}
