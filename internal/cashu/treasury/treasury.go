// Package treasury is the faucet's money: one Cashu wallet (package ecash)
// at one mint, kept in outpost's badger database. It pays out tokens and
// Lightning invoices (melt), takes deposits by mint quote or by token, and
// turns the wallet's errors into outpost's: a mint that cannot be reached
// (503 mint_unavailable) is told apart from one that does not work with
// this wallet (502 mint_incompatible, with what is wrong).
package treasury

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/cashu/minturl"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Config configures a treasury.
type Config struct {
	DB            *kv.DB
	MintURL       string   // the one mint the wallet holds ecash at
	AcceptedMints []string // other mints whose tokens are taken in over Lightning
	Log           *slog.Logger
	Timeout       time.Duration // per request to a mint; default 15 s
	MeltTimeout   time.Duration // per melt request; default 60 s
	// ProbeEvery is how often Watch probes the mint, twice as often while
	// it is unreachable; default 2 s.
	ProbeEvery time.Duration
	// AllowNoDLEQ lets the wallet use a mint that does not advertise DLEQ
	// proofs (NUT-12): its signatures cannot be checked; Status warns.
	AllowNoDLEQ bool
}

// Treasury is the faucet's wallet. Its methods may be called concurrently.
type Treasury struct {
	cfg      Config
	mintURL  string
	accepted map[string]bool // normalized URLs, the wallet's own mint included
	log      *slog.Logger
	w        *ecash.Wallet

	mu      sync.Mutex
	foreign map[string]*ecash.Wallet // wallets at other accepted mints, for deposits
	status  Status
	probe   chan struct{} // asks Watch to probe the mint now
	answers answers       // of the faucet's mint, through its wallet's HTTP client
}

// Status is how the wallet and its mint are doing, as last seen.
type Status struct {
	State  string    // "unknown" (not asked yet), "ok", "unreachable", "incompatible", "faulty"
	Reason string    // what is wrong, for /health
	At     time.Time // when last asked
	err    *outpost.Error
}

// Mint states of Status.
const (
	StateUnknown      = "unknown"
	StateOK           = "ok"
	StateUnreachable  = "unreachable"
	StateIncompatible = "incompatible"
	// StateFaulty: the mint's last answer held signatures that do not
	// verify. Payouts go on (nothing unverified is kept or handed out);
	// the first verified answer, or faultyFor, ends it.
	StateFaulty = "faulty"
)

// faultyFor is how long a faulty answer keeps the mint's state "faulty"
// when no verified answer follows.
const faultyFor = time.Minute

// New opens the treasury's wallet. It reads only the store: a mint that is down delays
// payouts instead of stopping the program.
func New(cfg Config) (*Treasury, error) {
	mint, err := NormalizeMintURL(cfg.MintURL)
	if err != nil {
		return nil, err
	}
	if cfg.DB == nil {
		return nil, errors.New("treasury: DB is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	t := &Treasury{cfg: cfg, mintURL: mint, accepted: map[string]bool{mint: true}, log: cfg.Log,
		foreign: map[string]*ecash.Wallet{}, status: Status{State: StateUnknown}, probe: make(chan struct{}, 1)}
	for _, m := range cfg.AcceptedMints {
		n, err := NormalizeMintURL(m)
		if err != nil {
			return nil, err
		}
		t.accepted[n] = true
	}
	if t.w, err = t.open(mint); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Treasury) open(mint string) (*ecash.Wallet, error) {
	var client *http.Client
	if mint == t.mintURL { // another mint's answers say nothing of the faucet's
		t.answers.next = http.DefaultTransport
		client = &http.Client{Transport: &t.answers}
	}
	return ecash.Open(ecash.Config{DB: t.cfg.DB, MintURL: mint, Log: t.log, Timeout: t.cfg.Timeout, MeltTimeout: t.cfg.MeltTimeout,
		AllowNoDLEQ: t.cfg.AllowNoDLEQ, HTTP: client})
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

// Balance is the spendable balance in sats, from the store. ok is false
// while the mint has been found unreachable or incompatible: the sats are
// there, but cannot be paid out.
func (t *Treasury) Balance() (int64, bool) {
	st := t.Status()
	return int64(t.w.Balance()), st.State != StateUnreachable && st.State != StateIncompatible
}

// Available is what a payout can count on: the balance and the change
// that operations in flight will give back.
func (t *Treasury) Available() int64 { return int64(t.w.Holdings().Available()) }

// Quarantined is the sats of proofs the mint refused, as last recorded
// (no read of the store: /health asks it).
func (t *Treasury) Quarantined() int64 { return int64(t.w.Holdings().Quarantined) }

// Status is the wallet's state as last seen by an operation or a probe.
func (t *Treasury) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status.State == StateFaulty && time.Since(t.status.At) > faultyFor {
		t.status = Status{State: StateOK, At: time.Now()}
	}
	return t.status
}

// WithoutDLEQ reports whether the wallet takes the mint's signatures
// without DLEQ proofs (see Config.AllowNoDLEQ).
func (t *Treasury) WithoutDLEQ() bool { return t.w.WithoutDLEQ() }

// Ready returns the error a payout would get right now because of the
// mint's state, or nil.
func (t *Treasury) Ready() error {
	st := t.Status()
	if st.err != nil {
		return st.err
	}
	return nil
}

// note records what an operation's error says about the mint. A request
// its caller gave up on (a client gone, a shutdown) says nothing, and one
// that did not reach the mint only asks Watch to probe it: one lost
// request does not close the faucet, the probe decides.
func (t *Treasury) note(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	var st Status
	switch ecash.ProblemOf(err) {
	case ecash.Unreachable:
		t.probeNow()
		return
	case ecash.Incompatible:
		st = Status{State: StateIncompatible, Reason: ecash.AsMintError(err).Error(), err: mintIncompatible(err)}
	case ecash.Faulty:
		st = Status{State: StateFaulty, Reason: ecash.AsMintError(err).Error()}
	case ecash.Refused:
		t.answered() // it answered
		return
	default:
		if err == nil {
			t.answered()
		}
		return
	}
	t.set(st)
}

// answered records that an operation succeeded (or was refused): the mint
// is ok, if it answered since its state was last judged. An operation
// answered from what the wallet already knew asked the mint nothing, and
// must not end an outage the probes still see (a cached success during
// an outage made health flap).
func (t *Treasury) answered() {
	t.mu.Lock()
	cur := t.status
	t.mu.Unlock()
	if cur.State != StateOK && !t.answers.since(cur.At) {
		return
	}
	t.set(Status{State: StateOK})
}

// set records the mint's state, logging a change.
func (t *Treasury) set(st Status) {
	st.At = time.Now()
	t.mu.Lock()
	changed := t.status.State != st.State
	t.status = st
	t.mu.Unlock()
	if changed && st.State != StateOK {
		t.log.Warn("faucet wallet: mint "+st.State, "mint", t.mintURL, "reason", st.Reason)
	} else if changed {
		t.log.Info("faucet wallet: mint ok", "mint", t.mintURL, "balance_sats", t.w.Balance())
	}
}

func (t *Treasury) unreachable(err error) {
	t.set(Status{State: StateUnreachable, Reason: ecash.AsMintError(err).Error(), err: mintUnavailable()})
}

func (t *Treasury) probeNow() {
	select {
	case t.probe <- struct{}{}:
	default:
	}
}

// Probing: every Config.ProbeEvery (twice as often while the mint is
// unreachable, and at once when a request failed) the mint is asked for its
// keysets, with probeTimeout, so the state is true within a few seconds
// whether the faucet is busy or idle.
const (
	probeEvery   = 2 * time.Second
	probeTimeout = 3 * time.Second
)

// Watch probes the mint until ctx ends: an answer makes it ok (and, after
// an outage, settles at once the operations the outage left open, so
// their reservations end), no answer makes it unreachable. A change of
// keysets seen by a probe is loaded at once.
func (t *Treasury) Watch(ctx context.Context) {
	for {
		every := cmp.Or(t.cfg.ProbeEvery, probeEvery)
		if t.Status().State == StateUnreachable {
			every /= 2
		}
		select {
		case <-ctx.Done():
			return
		case <-t.probe:
		case <-time.After(every):
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := t.w.Probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		t.afterProbe(ctx, err)
	}
}

func (t *Treasury) afterProbe(ctx context.Context, err error) {
	prev := t.Status().State
	switch ecash.ProblemOf(err) {
	case ecash.Unreachable:
		t.unreachable(err)
		return
	case ecash.Incompatible:
		t.note(err)
		return
	}
	if err != nil {
		return // a failure of our own (the store's) says nothing of the mint
	}
	if prev == StateIncompatible {
		// An answer found unreadable may have been a passing fault: the
		// mint is compatible again once its info and keysets check out.
		rctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := t.w.Refresh(rctx)
		cancel()
		if err != nil {
			t.note(err)
			return
		}
	}
	if prev != StateOK && prev != StateFaulty {
		t.set(Status{State: StateOK})
	}
	// Operations a lost answer or an outage left open are settled as soon
	// as the mint can tell what became of them, so their reservations end.
	if n, err := t.w.Open(); err != nil || n == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if open, err := t.w.Recover(rctx); open > 0 && prev != StateOK {
		t.log.Info("faucet wallet: operations still open after the mint came back", "open", open, "err", err)
	}
}

func mintUnavailable() *outpost.Error {
	e := outpost.Errorf(outpost.Unavailable, "mint_unavailable", "the faucet's mint cannot be reached right now; try again later").With("cause", "mint")
	e.RetryAfter = 30 * time.Second
	return e
}

func mintIncompatible(err error) *outpost.Error {
	detail := err.Error()
	if me := ecash.AsMintError(err); me != nil && me.Detail != "" {
		detail = me.Detail
	}
	return outpost.Errorf(outpost.BadGateway, "mint_incompatible",
		"the faucet's mint does not work with the faucet's wallet: %s", detail).With("cause", "mint")
}

// ErrInsufficientFunds is returned when paying would take the balance below
// what must be kept; nothing was paid.
var ErrInsufficientFunds = outpost.Errorf(outpost.Unavailable, "insufficient_funds", "the faucet does not have enough sats right now")

// failure maps a wallet error to outpost's error; refusal is the client
// error for a mint's refusal in this context. Errors about the mint update
// the status.
func (t *Treasury) failure(err error, refusal func(detail string) *outpost.Error) error {
	if err == nil {
		t.note(nil)
		return nil
	}
	t.note(err)
	switch {
	case errors.Is(err, ecash.ErrInsufficientFunds):
		return ErrInsufficientFunds
	case errors.Is(err, ecash.ErrClosed):
		return outpost.Errorf(outpost.Unavailable, "mint_unavailable", "the faucet is shutting down")
	}
	me := ecash.AsMintError(err)
	switch {
	case me == nil:
		return err // internal: logged, 500
	case me.Problem == ecash.Unreachable:
		return mintUnavailable()
	case me.Problem == ecash.Incompatible:
		return mintIncompatible(err)
	case me.Problem == ecash.Faulty:
		return outpost.Errorf(outpost.BadGateway, "mint_error",
			"the faucet's mint answered with signatures that do not verify; nothing was paid, try again").With("cause", "mint")
	}
	if refusal == nil {
		return outpost.Errorf(outpost.BadGateway, "mint_error", "the mint refused: %s", me.Detail)
	}
	return refusal(me.Detail)
}

// CheckMint asks the mint for its info and keysets (within ctx), settles
// operations left open, and records what it found for Status.
func (t *Treasury) CheckMint(ctx context.Context) error {
	err := t.w.Refresh(ctx)
	if err == nil {
		var open int
		if open, err = t.w.Recover(ctx); open > 0 {
			t.log.Info("faucet wallet: operations still open", "count", open)
		}
	}
	if ecash.ProblemOf(err) == ecash.Unreachable {
		t.unreachable(err) // a question of its own, not a payout's: no need to probe again
	} else {
		t.note(err)
	}
	if err == nil {
		return nil
	}
	// A failure of our own (the store's) says nothing about the mint.
	if ecash.ProblemOf(err) == 0 && !errors.Is(err, context.Canceled) {
		t.log.Log(ctx, kv.FailureLevel(err), "faucet wallet: checking the mint", "mint", t.mintURL, "err", err)
	}
	return t.Ready()
}

// Close stops new operations.
func (t *Treasury) Close(context.Context) error {
	t.w.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.foreign {
		f.Close()
	}
	return nil
}

// Ledger is where the wallet's sats are, beyond what the faucet's own
// records of claims and deposits hold.
type Ledger struct {
	BalanceSats     int64 // spendable
	InFlightSats    int64 // inputs of operations not settled yet, proofs held for a melt
	QuarantinedSats int64 // proofs the mint refused
	LostSats        int64 // signatures that never verified, proofs spent elsewhere
	SurplusSats     int64 // what the mint signed beyond what it took
	InternalFeeSats int64 // fees of the wallet's housekeeping (retired keysets, quarantine retries), and of swaps a payout gave up on that the mint carried out
}

// Ledger reads the wallet's figures from the store.
func (t *Treasury) Ledger() (l Ledger, err error) {
	err = t.cfg.DB.View(func(txn *kv.Txn) (err error) {
		l, err = t.LedgerIn(txn)
		return err
	})
	return l, err
}

// LedgerIn is Ledger read in txn, for books of the caller's own that must
// agree with the wallet's (the faucet's stats).
func (t *Treasury) LedgerIn(txn *kv.Txn) (Ledger, error) {
	h, tot, err := t.w.BooksIn(txn)
	return Ledger{BalanceSats: int64(h.Unspent), InFlightSats: int64(h.Reserved), QuarantinedSats: int64(h.Quarantined),
		LostSats: int64(tot.LostSats), SurplusSats: int64(tot.SurplusSats), InternalFeeSats: int64(tot.InternalFeeSats)}, err
}

// Minted tells, in txn, whether the ecash of a deposit's mint quote is in
// the wallet already (CompleteMint mints it, then the caller books it).
func (t *Treasury) Minted(txn *kv.Txn, quoteID string) (bool, error) { return t.w.Minted(txn, quoteID) }

// Payout is what a payout has done to the wallet so far, as its caller
// will book it: paid (a melt paid, a token or locked proofs made and not
// taken back), and what it cost, paid or not.
type Payout struct {
	Paid    bool
	FeeSats int64
}

// PayoutIn tells, in txn, what the payout filed under ref (a melt quote's
// id; a token's or locked proofs' ref, the claim id) has done so far: the
// wallet settles it, then the caller books it, in two transactions.
func (t *Treasury) PayoutIn(txn *kv.Txn, ref string) (Payout, error) {
	p, err := t.w.PayoutIn(txn, ref)
	return Payout{Paid: p.Paid, FeeSats: int64(p.Fee)}, err
}

// Receipt is what a token taken in at the faucet's own mint brought in so
// far: Settled once known (nothing, if it failed or never began).
type Receipt struct {
	Settled    bool
	AmountSats int64
	FeeSats    int64
}

// ReceiptIn tells, in txn, what the Redeem filed under ref brought in: the
// wallet settles it, then the caller books it, in two transactions.
func (t *Treasury) ReceiptIn(txn *kv.Txn, ref string) (Receipt, error) {
	r, err := t.w.ReceiptIn(txn, ref)
	return Receipt{Settled: r.Settled, AmountSats: int64(r.Received), FeeSats: int64(r.Fee)}, err
}

// Keysets lists the mint's keysets as the wallet knows them.
func (t *Treasury) Keysets() []ecash.Keyset { return t.w.Keysets() }

// Audit asks the mint about every proof the wallet holds (NUT-07).
func (t *Treasury) Audit(ctx context.Context) (ecash.Audit, error) {
	a, err := t.w.Audit(ctx)
	return a, t.failure(err, nil)
}

// Tidy drops proofs the mint says are spent, forgets handed-out tokens
// once redeemed, and moves proofs of retired keysets to an active one.
func (t *Treasury) Tidy(ctx context.Context) error {
	return t.failure(t.w.Tidy(ctx), func(d string) *outpost.Error {
		return outpost.Errorf(outpost.BadGateway, "mint_error", "the mint refused: %s", d)
	})
}

// --- payouts ---

// Token is a payout as ecash.
type Token struct {
	Token      string // cashuB...
	AmountSats int64  // what the receiver gets after swapping it
	FeeSats    int64  // what the faucet paid on top (input fees, its own and the receiver's)
}

func paymentFailed(detail string) *outpost.Error {
	return outpost.Errorf(outpost.BadGateway, "payment_failed", "the mint refused the payment: %s", detail)
}

// SendToken takes amountSats (plus the fees the receiver will pay to swap
// it) out of the wallet as a token, unless that leaves less than keepSats.
// ref (the claim id) files it for Reclaim. On an error, the Token's FeeSats
// is what the failed attempt cost (a swap the mint carried out whose
// token could not be made).
func (t *Treasury) SendToken(ctx context.Context, ref string, amountSats, keepSats int64) (Token, error) {
	s, err := t.w.Send(ctx, ref, uint64(amountSats), uint64(max(keepSats, 0)))
	if err != nil {
		t.log.Warn("faucet wallet: send failed", "amount_sats", amountSats, "cost_sats", s.Fee, "err", err)
		return Token{FeeSats: int64(s.Fee)}, t.failure(err, paymentFailed)
	}
	t.note(nil)
	// Without the DLEQ proofs, as Nutshell's wallet sends by default: the
	// wallet checked them before it kept the proofs, and a receiver that
	// checks them needs the keyset's keys, which cashu-ts 4 has only for
	// active keysets, so a token of a keyset retired meanwhile would not
	// be received.
	str, err := ecash.Token{Mint: t.mintURL, Proofs: ecash.WithoutDLEQ(s.Proofs)}.Encode(false)
	if err != nil {
		return Token{}, err
	}
	return Token{Token: str, AmountSats: int64(s.Amount), FeeSats: int64(s.Fee)}, nil
}

// Reclaimed is what became of a token payout whose claim never got an
// answer (its process stopped between making the token and recording it).
type Reclaimed struct {
	Redeemed bool  // someone redeemed the token: it was paid
	FeeSats  int64 // what the payout cost (when it was not redeemed: the fees of making and taking back the token)
}

// Reclaim settles the token payout filed under ref (a claim id): a token
// nobody redeemed is taken back into the wallet (or was never made);
// one that was redeemed reports so. An error means the mint must be asked
// again later.
func (t *Treasury) Reclaim(ctx context.Context, ref string) (Reclaimed, error) {
	_, redeemed, fee, err := t.w.Reclaim(ctx, ref)
	if err != nil {
		return Reclaimed{}, t.failure(err, paymentFailed)
	}
	return Reclaimed{Redeemed: redeemed, FeeSats: int64(fee)}, nil
}

// MeltQuote is a mint's offer to pay an invoice (NUT-05).
type MeltQuote struct {
	ID             string    `json:"id"`
	AmountSats     int64     `json:"amount_sats"`
	FeeReserveSats int64     `json:"fee_reserve_sats"`
	ExpiresAt      time.Time `json:"expires_at"`
	PaymentHash    string    `json:"payment_hash,omitempty"` // of the invoice, to check the preimage
}

// MeltQuote asks the mint what paying bolt11 costs.
func (t *Treasury) MeltQuote(ctx context.Context, bolt11 string) (MeltQuote, error) {
	q, err := t.w.MeltQuote(ctx, bolt11)
	if err != nil {
		return MeltQuote{}, t.failure(err, func(d string) *outpost.Error {
			return outpost.Errorf(outpost.BadGateway, "payment_failed", "the mint will not pay this invoice: %s", d)
		})
	}
	t.note(nil)
	mq := MeltQuote{ID: q.Quote, AmountSats: int64(q.Amount), FeeReserveSats: int64(q.FeeReserve), PaymentHash: paymentHash(bolt11)}
	if q.Expiry != nil {
		mq.ExpiresAt = time.Unix(*q.Expiry, 0)
	}
	return mq, nil
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
	Preimage string // only one that hashes to the invoice's payment hash
	FeeSats  int64  // known once paid; the most it can cost while pending; what a failed attempt cost
	Reason   string
	// Unsure is set when the melt call got no answer and the mint says
	// "unpaid", which a request still in flight could change.
	Unsure bool
}

// Melt pays the quote's invoice from the wallet unless that leaves less than
// keepSats. An error means nothing was attempted (FeeSats is what preparing
// it cost); every attempted payment comes back as paid, pending or failed.
func (t *Treasury) Melt(ctx context.Context, q MeltQuote, keepSats int64) (Payment, error) {
	p, err := t.w.Melt(ctx, ecash.MeltQuote{Quote: q.ID, Amount: uint64(q.AmountSats), FeeReserve: uint64(q.FeeReserveSats)}, uint64(max(keepSats, 0)))
	if err != nil {
		return Payment{FeeSats: int64(p.Fee)}, t.failure(err, paymentFailed)
	}
	t.note(nil)
	return t.payment(q, p), nil
}

// MeltStatus asks about a melt: paid (its fee return collected), pending,
// or failed (the wallet has its ecash back).
func (t *Treasury) MeltStatus(ctx context.Context, q MeltQuote) (Payment, error) {
	p, err := t.w.MeltStatus(ctx, q.ID)
	if err != nil {
		return Payment{}, t.failure(err, paymentFailed)
	}
	t.note(nil)
	return t.payment(q, p), nil
}

// payment turns the wallet's answer into a Payment. A preimage is kept only
// if it hashes to the invoice's payment hash: a mint that reports a payment
// without one (an internal settlement, a fake Lightning backend) or with a
// wrong one has still spent the ecash, so the payment stands, but no proof
// of payment is claimed.
func (t *Treasury) payment(q MeltQuote, p ecash.Payment) Payment {
	out := Payment{Reason: p.Reason, Unsure: p.Unsure, FeeSats: int64(p.Fee)}
	switch p.State {
	case ecash.Paid:
		out.State = Paid
		switch {
		case p.Preimage == "":
		case preimageMatches(p.Preimage, q.PaymentHash):
			out.Preimage = strings.ToLower(p.Preimage)
		case q.PaymentHash == "":
			t.log.Debug("faucet wallet: no payment hash to check the preimage against; not reported", "quote", q.ID)
		default:
			t.log.Warn("faucet wallet: the mint's preimage does not match the invoice; not reported", "quote", q.ID, "payment_hash", q.PaymentHash)
		}
	case ecash.Pending:
		out.State = Pending
	default:
		out.State = Failed // FeeSats: what the attempt cost
		if out.Reason == "" {
			out.Reason = "the Lightning payment failed"
		}
	}
	return out
}

// preimageMatches reports whether sha256(preimage) is hash (both hex).
func preimageMatches(preimage, hash string) bool {
	b, err := hex.DecodeString(preimage)
	if err != nil || len(b) != 32 || hash == "" {
		return false
	}
	sum := sha256.Sum256(b)
	return strings.EqualFold(hex.EncodeToString(sum[:]), hash)
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
	q, err := t.w.RequestMint(ctx, uint64(amountSats))
	if err != nil {
		return MintQuote{}, t.failure(err, func(d string) *outpost.Error {
			return outpost.Errorf(outpost.Unprocessable, "deposit_refused", "the mint refused the deposit: %s", d)
		})
	}
	t.note(nil)
	mq := MintQuote{ID: q.Quote, Invoice: q.Request, PaymentHash: paymentHash(q.Request), AmountSats: amountSats}
	if q.Expiry != nil {
		mq.ExpiresAt = time.Unix(*q.Expiry, 0)
	} else {
		mq.ExpiresAt = time.Now().Add(time.Hour)
	}
	return mq, nil
}

// MintState is what became of a mint quote.
type MintState = ecash.MintState

const (
	MintUnpaid = ecash.MintUnpaid // not paid (yet)
	MintIssued = ecash.MintIssued // paid and its ecash is in the wallet
	MintLost   = ecash.MintLost   // issued by the mint, but not to this wallet's outputs
)

// CompleteMint mints the quote's ecash if its invoice was paid. It is safe
// to call again: a quote already minted reports MintIssued.
func (t *Treasury) CompleteMint(ctx context.Context, quoteID string) (MintState, error) {
	st, err := t.w.CompleteMint(ctx, quoteID)
	if err != nil {
		return "", t.failure(err, func(d string) *outpost.Error {
			return outpost.Errorf(outpost.BadGateway, "mint_error", "the mint refused to mint the deposit: %s", d)
		})
	}
	t.note(nil)
	return st, nil
}
