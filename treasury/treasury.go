// Package treasury is the faucet's money: one Cashu wallet (gonuts) at one
// mint. It pays out tokens and Lightning invoices (melt), takes deposits by
// mint quote or by token, and serializes every wallet operation, because
// gonuts' wallet is not safe for concurrent use.
package treasury

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut04"
	"github.com/elnosh/gonuts/cashu/nuts/nut05"
	"github.com/elnosh/gonuts/wallet"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/minturl"
)

// Config configures a treasury.
type Config struct {
	Dir           string   // the wallet's directory (seed, proofs, quotes)
	MintURL       string   // the one mint the wallet holds ecash at
	AcceptedMints []string // other mints whose tokens are swapped in over Lightning
	Log           *slog.Logger
}

// Treasury is the faucet's wallet. Its methods may be called concurrently;
// they take turns on the wallet.
type Treasury struct {
	dir      string
	mintURL  string
	accepted map[string]bool // normalized URLs, the wallet's own mint included
	log      *slog.Logger
	http     *http.Client // for the calls we make ourselves, with deadlines

	turn    chan struct{} // holds one token while an operation uses the wallet
	w       *wallet.Wallet
	balance atomic.Int64 // sats, as of the last operation; -1 before the wallet loads
	closed  bool
	closeMu sync.Once
}

// New returns a treasury; the wallet is loaded on first use, so a mint that
// is down at start-up delays payouts instead of stopping the program.
func New(cfg Config) (*Treasury, error) {
	mint, err := NormalizeMintURL(cfg.MintURL)
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	t := &Treasury{dir: cfg.Dir, mintURL: mint, accepted: map[string]bool{mint: true}, log: cfg.Log,
		http: &http.Client{Timeout: 10 * time.Second}, turn: make(chan struct{}, 1)}
	for _, m := range cfg.AcceptedMints {
		n, err := NormalizeMintURL(m)
		if err != nil {
			return nil, err
		}
		t.accepted[n] = true
	}
	t.balance.Store(-1)
	return t, nil
}

// NormalizeMintURL gives a mint URL its one spelling (minturl's, which the
// mint directory uses too). Tokens name their mint however their wallet
// spelled it.
func NormalizeMintURL(s string) (string, error) {
	n, err := minturl.Normalize(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a mint URL: %w", s, err)
	}
	return n, nil
}

// MintURL is the wallet's mint.
func (t *Treasury) MintURL() string { return t.mintURL }

// Accepts reports whether tokens of mint (any spelling) are taken as deposits.
func (t *Treasury) Accepts(mint string) bool {
	n, err := NormalizeMintURL(mint)
	return err == nil && t.accepted[n]
}

// AcceptedMints lists the mints whose tokens are accepted, own mint first.
func (t *Treasury) AcceptedMints() []string {
	var others []string
	for m := range t.accepted {
		if m != t.mintURL {
			others = append(others, m)
		}
	}
	sort.Strings(others)
	return append([]string{t.mintURL}, others...)
}

// Balance is the spendable balance in sats as of the last operation, and
// false before the wallet could be loaded.
func (t *Treasury) Balance() (int64, bool) {
	b := t.balance.Load()
	return max(b, 0), b >= 0
}

var (
	errBusy   = outpost.Errorf(outpost.Unavailable, "mint_unavailable", "the faucet's wallet is busy; try again shortly")
	errClosed = outpost.Errorf(outpost.Unavailable, "mint_unavailable", "the faucet is shutting down")
)

// ErrInsufficientFunds is returned when paying would take the balance below
// what must be kept; nothing was paid.
var ErrInsufficientFunds = outpost.Errorf(outpost.Unavailable, "insufficient_funds", "the faucet does not have enough sats right now")

func mintUnavailable(err error) *outpost.Error {
	return outpost.Errorf(outpost.Unavailable, "mint_unavailable", "the faucet's mint cannot be reached right now").With("cause", "mint")
}

// use runs fn with the wallet, waiting for its turn until ctx ends. gonuts
// takes no contexts, so an operation that started runs to its end even if
// ctx ends meanwhile; callers that must know the outcome detach their ctx.
func (t *Treasury) use(ctx context.Context, fn func(w *wallet.Wallet) error) error {
	select {
	case t.turn <- struct{}{}:
	case <-ctx.Done():
		return errBusy
	}
	defer func() { <-t.turn }()
	if t.closed {
		return errClosed
	}
	if t.w == nil {
		w, err := wallet.LoadWallet(wallet.Config{WalletPath: t.dir, CurrentMintURL: t.mintURL})
		if err != nil {
			t.log.Warn("faucet wallet: cannot load; the mint may be down", "mint", t.mintURL, "err", err)
			return mintUnavailable(err)
		}
		t.w = w
		t.balance.Store(int64(w.GetBalance()))
		t.log.Info("faucet wallet loaded", "mint", t.mintURL, "balance_sats", w.GetBalance())
	}
	defer func() { t.balance.Store(int64(t.w.GetBalance())) }()
	return fn(t.w)
}

// Refresh loads the wallet if it is not yet and updates the balance.
func (t *Treasury) Refresh(ctx context.Context) error {
	return t.use(ctx, func(*wallet.Wallet) error { return nil })
}

// Close waits for the operation in progress (up to ctx) and closes the wallet.
func (t *Treasury) Close(ctx context.Context) error {
	var err error
	t.closeMu.Do(func() {
		select {
		case t.turn <- struct{}{}:
			defer func() { <-t.turn }()
		case <-ctx.Done():
			err = errors.New("faucet wallet: an operation was still running at shutdown")
			return
		}
		t.closed = true
		if t.w != nil {
			err = t.w.Shutdown()
		}
	})
	return err
}

// CheckMint asks the mint for its info (NUT-06) within ctx; it does not
// touch the wallet.
func (t *Treasury) CheckMint(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.mintURL+"/v1/info", nil)
	if err != nil {
		return err
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("mint info: HTTP %d", resp.StatusCode)
	}
	return nil
}

// --- payouts ---

// Token is a payout as ecash.
type Token struct {
	Token      string // cashuB...
	AmountSats int64  // what the receiver gets after swapping it
	FeeSats    int64  // what the faucet paid on top (input fees)
}

// SendToken takes amountSats (plus the fees the receiver will pay to swap
// it) out of the wallet as a token, unless that leaves less than keepSats.
func (t *Treasury) SendToken(ctx context.Context, amountSats, keepSats int64) (Token, error) {
	var out Token
	err := t.use(ctx, func(w *wallet.Wallet) error {
		before := int64(w.GetBalance())
		if before-amountSats < keepSats {
			return ErrInsufficientFunds
		}
		proofs, err := w.Send(uint64(amountSats), t.mintURL, true)
		if err != nil {
			t.log.Warn("faucet wallet: send failed", "amount_sats", amountSats, "err", err)
			return outpost.Errorf(outpost.BadGateway, "payment_failed", "the mint refused to make the token")
		}
		tok, err := cashu.NewTokenV4(proofs, t.mintURL, cashu.Sat, false)
		if err != nil {
			return err
		}
		s, err := tok.Serialize()
		if err != nil {
			return err
		}
		out = Token{Token: s, AmountSats: amountSats, FeeSats: max(0, before-int64(w.GetBalance())-amountSats)}
		return nil
	})
	return out, err
}

// MeltQuote is a mint's offer to pay an invoice (NUT-05).
type MeltQuote struct {
	ID             string    `json:"id"`
	AmountSats     int64     `json:"amount_sats"`
	FeeReserveSats int64     `json:"fee_reserve_sats"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// MeltQuote asks the mint what paying bolt11 costs.
func (t *Treasury) MeltQuote(ctx context.Context, bolt11 string) (MeltQuote, error) {
	var q MeltQuote
	err := t.use(ctx, func(w *wallet.Wallet) error {
		r, err := w.RequestMeltQuote(bolt11, t.mintURL)
		if err != nil {
			var ce cashu.Error
			if errors.As(err, &ce) {
				return outpost.Errorf(outpost.BadGateway, "payment_failed", "the mint will not pay this invoice: %s", ce.Detail)
			}
			return mintUnavailable(err)
		}
		q = MeltQuote{ID: r.Quote, AmountSats: int64(r.Amount), FeeReserveSats: int64(r.FeeReserve), ExpiresAt: time.Unix(int64(r.Expiry), 0)}
		return nil
	})
	return q, err
}

// State is the state of a payment.
type State string

const (
	Paid    State = "paid"
	Pending State = "pending"
	Failed  State = "failed"
)

// Payment is the outcome of a melt.
type Payment struct {
	State    State
	Preimage string
	FeeSats  int64 // known when paid at once; otherwise the fee reserve
	Reason   string
	// Unsure is set when the melt call failed and the mint could not say
	// (or said "unpaid" right after an error, which a request still in
	// flight could change). Such a payment is pending until checked again.
	Unsure bool
}

// Melt pays the quote's invoice from the wallet unless that leaves less than
// keepSats. An error means nothing was attempted; every attempted payment
// comes back as paid, pending or failed.
func (t *Treasury) Melt(ctx context.Context, q MeltQuote, keepSats int64) (Payment, error) {
	var p Payment
	err := t.use(ctx, func(w *wallet.Wallet) error {
		before := int64(w.GetBalance())
		if before-q.AmountSats-q.FeeReserveSats < keepSats {
			return ErrInsufficientFunds
		}
		res, err := w.Melt(q.ID)
		if err != nil {
			p = t.afterMeltError(w, q, err)
			return nil
		}
		switch res.State {
		case nut05.Paid:
			p = Payment{State: Paid, Preimage: res.Preimage, FeeSats: max(0, before-int64(w.GetBalance())-q.AmountSats)}
		case nut05.Pending:
			p = Payment{State: Pending, FeeSats: q.FeeReserveSats, Reason: "the Lightning payment is in flight"}
		default:
			p = Payment{State: Failed, Reason: "the Lightning payment failed"}
		}
		return nil
	})
	return p, err
}

// afterMeltError decides what a melt that returned an error did. A mint's
// refusal (a NUT error other than "pending"/"already paid") is final; for
// anything else the mint is asked.
func (t *Treasury) afterMeltError(w *wallet.Wallet, q MeltQuote, err error) Payment {
	var ce cashu.Error
	if errors.As(err, &ce) && ce.Code != cashu.MeltQuotePendingErrCode && ce.Code != cashu.MeltQuoteAlreadyPaidErrCode {
		return Payment{State: Failed, Reason: "the mint refused: " + ce.Detail}
	}
	t.log.Warn("faucet wallet: melt error; asking the mint", "quote", q.ID, "err", err)
	st, cerr := w.CheckMeltQuoteState(q.ID)
	switch {
	case cerr != nil:
		return Payment{State: Pending, FeeSats: q.FeeReserveSats, Reason: "the payment outcome is not known yet", Unsure: true}
	case st.State == nut05.Paid:
		return Payment{State: Paid, Preimage: st.Preimage, FeeSats: q.FeeReserveSats}
	case st.State == nut05.Pending:
		return Payment{State: Pending, FeeSats: q.FeeReserveSats, Reason: "the Lightning payment is in flight"}
	default:
		return Payment{State: Pending, FeeSats: q.FeeReserveSats, Reason: "the payment outcome is not known yet", Unsure: true}
	}
}

// MeltStatus asks the mint about a melt quote: paid (with the preimage),
// pending, or failed (unpaid; the wallet takes its proofs back).
func (t *Treasury) MeltStatus(ctx context.Context, q MeltQuote) (Payment, error) {
	var p Payment
	err := t.use(ctx, func(w *wallet.Wallet) error {
		st, err := w.CheckMeltQuoteState(q.ID)
		if err != nil {
			return mintUnavailable(err)
		}
		switch st.State {
		case nut05.Paid:
			p = Payment{State: Paid, Preimage: st.Preimage, FeeSats: q.FeeReserveSats}
		case nut05.Pending:
			p = Payment{State: Pending, FeeSats: q.FeeReserveSats}
		default:
			p = Payment{State: Failed, Reason: "the Lightning payment failed"}
		}
		return nil
	})
	return p, err
}

// --- deposits by Lightning ---

// MintQuote is an invoice that, once paid, mints ecash into the wallet (NUT-04).
type MintQuote struct {
	ID          string
	Invoice     string
	PaymentHash string
	AmountSats  int64
	ExpiresAt   time.Time
}

// RequestMint asks the mint for an invoice of amountSats.
func (t *Treasury) RequestMint(ctx context.Context, amountSats int64) (MintQuote, error) {
	var q MintQuote
	err := t.use(ctx, func(w *wallet.Wallet) error {
		r, err := w.RequestMint(uint64(amountSats), t.mintURL)
		if err != nil {
			var ce cashu.Error
			if errors.As(err, &ce) {
				return outpost.Errorf(outpost.Unprocessable, "deposit_refused", "the mint refused the deposit: %s", ce.Detail)
			}
			return mintUnavailable(err)
		}
		stored := w.GetMintQuoteById(r.Quote)
		q = MintQuote{ID: r.Quote, Invoice: r.Request, AmountSats: amountSats, ExpiresAt: time.Unix(int64(r.Expiry), 0)}
		if stored != nil {
			q.PaymentHash = paymentHash(stored.PaymentRequest)
		}
		return nil
	})
	return q, err
}

// MintState is what became of a mint quote.
type MintState string

const (
	MintUnpaid MintState = "unpaid" // not paid (yet)
	MintIssued MintState = "issued" // paid and its ecash is in the wallet
	MintLost   MintState = "lost"   // issued by the mint, but not to this wallet's records
)

// CompleteMint mints the quote's ecash if its invoice was paid. It is safe
// to call again: a quote already minted reports MintIssued.
func (t *Treasury) CompleteMint(ctx context.Context, quoteID string) (MintState, error) {
	state := MintUnpaid
	err := t.use(ctx, func(w *wallet.Wallet) error {
		q := w.GetMintQuoteById(quoteID)
		if q == nil {
			return fmt.Errorf("mint quote %s is not in the wallet", quoteID)
		}
		if q.State == nut04.Issued {
			state = MintIssued
			return nil
		}
		st, err := w.MintQuoteState(quoteID)
		if err != nil {
			return mintUnavailable(err)
		}
		switch st.State {
		case nut04.Unpaid:
			return nil
		case nut04.Issued:
			state = MintLost
			return nil
		}
		if _, err := w.MintTokens(quoteID); err != nil {
			return fmt.Errorf("mint tokens for quote %s: %w", quoteID, err)
		}
		state = MintIssued
		return nil
	})
	return state, err
}

// Tidy forgets ecash the wallet handed out (tokens, melted proofs) that the
// mint reports spent, so the wallet's pending list stays short.
func (t *Treasury) Tidy(ctx context.Context) error {
	return t.use(ctx, func(w *wallet.Wallet) error { return w.RemoveSpentProofs() })
}
