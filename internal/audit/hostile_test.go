package audit_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/hostile"
)

func shortWait(t *testing.T, st *store.Store, onFailure ...func(string, time.Time, string)) *audit.Auditor {
	t.Helper()
	a, _ := shortWaitAhead(t, st, onFailure...)
	return a
}

// payeeWait is shortWait's PayeeWait.
const payeeWait = 2 * time.Second

// aheadClock is the wall clock, moved ahead by what a test skipped: the
// payee wait of a round left pending is skipped, not slept through, while
// what the round itself waits for runs on.
type aheadClock struct{ ahead atomic.Int64 }

func (c *aheadClock) Now() time.Time       { return time.Now().Add(time.Duration(c.ahead.Load())) }
func (c *aheadClock) Skip(d time.Duration) { c.ahead.Add(int64(d)) }

// shortWaitAhead is shortWait on an aheadClock.
func shortWaitAhead(t *testing.T, st *store.Store, onFailure ...func(string, time.Time, string)) (*audit.Auditor, *aheadClock) {
	t.Helper()
	return waitAhead(t, st, payeeWait, onFailure...)
}

// waitAhead is an auditor on an aheadClock that waits for a payee wait.
func waitAhead(t *testing.T, st *store.Store, wait time.Duration, onFailure ...func(string, time.Time, string)) (*audit.Auditor, *aheadClock) {
	t.Helper()
	clock := &aheadClock{}
	cfg := audit.Config{Settings: audit.DefaultSettings(), DB: st.DB, Log: logger, Timeout: 5 * time.Second, PayeeWait: wait, Now: clock.Now}
	if len(onFailure) > 0 {
		cfg.OnFailure = onFailure[0]
	}
	a, err := audit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a, clock
}

func mintHolding(t *testing.T, a *audit.Auditor, mint string) audit.MintHolding {
	t.Helper()
	for _, m := range balanced(t, a).Mints {
		if m.MintURL == mint {
			return m
		}
	}
	t.Fatalf("no holding at %s", mint)
	return audit.MintHolding{}
}

// TestPayeeRefusesToMint: a payee that is paid but refuses to mint fails
// the round at once, its amount booked lost; after two such rounds it gets
// no more sats and pays out what it holds; once it mints, the sats are
// booked back.
func TestPayeeRefusesToMint(t *testing.T) {
	t.Parallel()
	ms := mints(t, 2)
	px := hostile.New(t, ms[0].URL)
	st := openStore(t, t.TempDir())
	defer st.Close()
	var failedMu sync.Mutex
	var failed []string
	// Each of the two refused rounds waits out the payee wait, so it is
	// short here; a payee that mints sees the payment on its first poll (the
	// fake network settles an invoice within the melt that pays it).
	a, _ := waitAhead(t, st, 500*time.Millisecond, func(mint string, _ time.Time, detail string) {
		failedMu.Lock()
		failed = append(failed, mint)
		failedMu.Unlock()
	})
	fund(t, a, ms[1], 200)
	d, err := a.DepositQuote(ctxT(t), px.URL, 100)
	if err != nil {
		t.Fatal(err)
	}
	ms[0].Node.PayInvoice(d.Invoice)
	for d.State != audit.DepositDone {
		d, _ = a.Deposit(ctxT(t), d.ID)
	}
	px.Add(hostile.Rule{Route: "/v1/mint/bolt11", Fault: hostile.Refuse, Detail: "no"})
	for i := range 2 {
		r, err := a.Audit(ctxT(t), ms[1].URL, px.URL, 10)
		if err != nil || r.Outcome != audit.OutcomeFailed || r.Fault != audit.RolePayee {
			t.Fatalf("round %d: %+v %v", i, r, err)
		}
		if h := balanced(t, a); h.Books.LostToMintSats != uint64(10*(i+1)) {
			t.Fatalf("lost after round %d: %+v", i, h.Books)
		}
	}
	failedMu.Lock()
	if len(failed) != 2 || failed[0] != px.URL || failed[1] != px.URL {
		t.Errorf("failures told: %v", failed)
	}
	failedMu.Unlock()
	es, _, _ := a.Entries(px.URL, 0, 10)
	if len(es) != 2 || es[0].Outcome != audit.OutcomeFailed || es[0].Role != audit.RolePayee {
		t.Fatalf("payee entries: %+v", es)
	}
	if !mintHolding(t, a, px.URL).Withdrawn {
		t.Fatal("two failed audits in a row, not withdrawn")
	}
	r, err := a.RunRound(ctxT(t))
	if err != nil || r.Payer != px.URL || r.Outcome != audit.OutcomeOK {
		t.Fatalf("the withdrawn mint is not paying out: %+v %v", r, err)
	}
	px.Clear()
	if err := a.Resume(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if h := balanced(t, a); h.Books.LostToMintSats != 0 || h.Books.InFlightSats != 0 {
		t.Fatalf("the late mints are not booked back: %+v", h.Books)
	}
}

// TestPayerNeverPays: a melt the payer takes and never pays fails the
// round on the payer once the payee wait is over, its sats in flight, the
// books balanced; the payer is not asked to pay again meanwhile; when it
// pays after all, the round goes on and ends ok.
func TestPayerNeverPays(t *testing.T) {
	t.Parallel()
	ms := mints(t, 3)
	st := openStore(t, t.TempDir())
	defer st.Close()
	a, clock := shortWaitAhead(t, st)
	for _, m := range ms {
		fund(t, a, m, 100)
	}
	ms[1].Node.SetOutcome(func(string) lightning.State { return lightning.Pending })
	r, err := a.Audit(ctxT(t), ms[1].URL, ms[0].URL, 10)
	if err != nil || r.Outcome != audit.OutcomePending {
		t.Fatalf("round: %+v %v", r, err)
	}
	if h := mintHolding(t, a, ms[1].URL); h.InFlightSats < 10 || h.HeldSats > 90 {
		t.Fatalf("payer holding: %+v", h)
	}
	clock.Skip(payeeWait) // past PayeeWait
	if err := a.Resume(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	es, _, _ := a.Entries(ms[1].URL, 0, 10)
	if len(es) != 1 || es[0].Outcome != audit.OutcomeFailed || es[0].Role != audit.RolePayer || es[0].Error == nil {
		t.Fatalf("payer entries: %+v", es)
	}
	if h := balanced(t, a); h.Books.InFlightSats < 10 || h.Books.LostToMintSats != 0 {
		t.Fatalf("books with the melt pending: %+v", h.Books)
	}
	for range 2 {
		if r, err := a.RunRound(ctxT(t)); err == nil && r.Payer == ms[1].URL {
			t.Fatalf("the payer of a pending melt was asked to pay again: %+v", r)
		}
	}
	if err := ms[1].Node.ResolvePending(r.Invoice, true); err != nil {
		t.Fatal(err)
	}
	if err := a.Resume(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if es, _, _ = a.Entries(ms[1].URL, 0, 10); es[len(es)-1].Outcome != audit.OutcomeOK {
		t.Fatalf("the melt paid late: payer entries %+v", es)
	}
	if h := balanced(t, a); h.Books.InFlightSats != 0 || h.Books.LostToMintSats != 0 {
		t.Fatalf("books after the late payment: %+v", h.Books)
	}
}

// spentSayer is a mint that says every proof is spent (NUT-07).
func spentSayer(t *testing.T, mint string) string {
	u, _ := url.Parse(mint)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path != "/v1/checkstate" {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte(`"UNSPENT"`), []byte(`"SPENT"`))
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHeldProofsSaidSpent: a mint that says the wallet's unspent ecash is
// spent is flagged by the holdings check at once, and gets no more sats;
// what it says is spent is quarantined, booked lost to it, the books
// balanced.
func TestHeldProofsSaidSpent(t *testing.T) {
	t.Parallel()
	ms := mints(t, 2)
	liar := spentSayer(t, ms[0].URL)
	st := openStore(t, t.TempDir())
	defer st.Close()
	a := shortWait(t, st)
	fund(t, a, ms[1], 100)
	d, err := a.DepositQuote(ctxT(t), liar, 100)
	if err != nil {
		t.Fatal(err)
	}
	ms[0].Node.PayInvoice(d.Invoice)
	for d.State != audit.DepositDone {
		d, _ = a.Deposit(ctxT(t), d.ID)
	}
	if err := a.CheckHoldings(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	h := mintHolding(t, a, liar)
	if h.Flag == nil || !h.Withdrawn || h.Flag.Sats != 100 {
		t.Fatalf("not flagged: %+v", h)
	}
	if b := balanced(t, a).Books; h.HeldSats != 0 || h.LostSats != 100 || h.QuarantinedSats != 100 || b.LostToMintSats != 100 || b.HeldSats != 100 {
		t.Fatalf("what the mint says it spent is not booked lost to it: %+v %+v", h, b)
	}
	if h := mintHolding(t, a, ms[1].URL); h.Flag != nil || h.Withdrawn {
		t.Fatalf("the honest mint is flagged: %+v", h)
	}
	if r, err := a.Audit(ctxT(t), ms[1].URL, liar, 10); err == nil {
		t.Fatalf("a round paid the flagged mint: %+v", r)
	}
	for range 2 {
		r, err := a.RunRound(ctxT(t))
		if err == nil && r.Payee == liar {
			t.Fatalf("the flagged mint was paid: %+v", r)
		}
	}
}

// TestLowTrustWithdrawn: a mint whose directory trust falls under
// --audit-min-trust gets no more sats, and pays out what it holds.
func TestLowTrustWithdrawn(t *testing.T) {
	t.Parallel()
	ms := mints(t, 2)
	st := openStore(t, t.TempDir())
	defer st.Close()
	a, err := audit.New(audit.Config{Settings: audit.DefaultSettings(), DB: st.DB, Log: logger, Timeout: 5 * time.Second,
		Trust: func(u string) (int, bool) { return 10, u == ms[0].URL }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	for _, m := range ms {
		fund(t, a, m, 100)
	}
	if r, err := a.Audit(ctxT(t), ms[1].URL, ms[0].URL, 10); err == nil {
		t.Fatalf("a round paid the low-trust mint: %+v", r)
	}
	if !mintHolding(t, a, ms[0].URL).Withdrawn || mintHolding(t, a, ms[1].URL).Withdrawn {
		t.Fatal("withdrawn is not the low-trust mint alone")
	}
	r, err := a.RunRound(ctxT(t))
	if err != nil || r.Payer != ms[0].URL || r.Outcome != audit.OutcomeOK {
		t.Fatalf("the low-trust mint is not paying out: %+v %v", r, err)
	}
}

// lostAt is what the audit wallet booked lost to mint.
func lostAt(t *testing.T, a *audit.Auditor, mint string) uint64 {
	t.Helper()
	return mintHolding(t, a, mint).LostSats
}

// TestPayerKeepsMelt: a payer that takes the melt's inputs (NUT-07 then
// says SPENT) and never pays, whatever it answers the melt and its quote:
// UNPAID, PENDING, or PAID with a preimage that is not the invoice's. The
// round fails on the payer (once the payee wait is over, where it said
// pending or paid), the sats it kept are booked lost, and nothing else
// moves; the wallet holds no proof the mint spent.
func TestPayerKeepsMelt(t *testing.T) {
	t.Parallel()
	for _, state := range []string{"UNPAID", "PENDING", "PAID"} {
		t.Run(state, func(t *testing.T) {
			t.Parallel() // each on mints, a store and an auditor of its own
			ms := mints(t, 2)
			px := hostile.New(t, ms[1].URL)
			st := openStore(t, t.TempDir())
			defer st.Close()
			a, clock := shortWaitAhead(t, st)
			fund(t, a, ms[0], 100)
			fundAt(t, a, px.URL, ms[1].Node, 100)
			ms[1].Node.SetOutcome(func(string) lightning.State { return devmint.Kept })
			if state != "PAID" {
				px.Add(hostile.Rule{Route: "/v1/melt/bolt11", Fault: hostile.ChangeState, State: state})
				px.Add(hostile.Rule{Route: "/v1/melt/quote/bolt11/*", Fault: hostile.ChangeState, State: state})
			}
			ctx := ctxT(t)
			r, err := a.Audit(ctx, px.URL, ms[0].URL, 10)
			if err != nil {
				t.Fatalf("round: %+v %v", r, err)
			}
			clock.Skip(payeeWait) // where the payer said pending or paid, the round waits for the payee that long
			var es []audit.Entry
			testkit.WaitFor(t, 30*time.Second, "the round to fail on the payer", func() bool {
				if es, _, _ = a.Entries(px.URL, 0, 10); len(es) == 1 && es[0].Outcome == audit.OutcomeFailed && balanced(t, a).Books.InFlightSats == 0 {
					return true
				}
				if err := a.Resume(ctx); err != nil {
					t.Fatal(err)
				}
				return false
			})
			if es[0].Role != audit.RolePayer || es[0].Error == nil {
				t.Fatalf("payer entries: %+v", es)
			}
			if es, _, _ := a.Entries(ms[0].URL, 0, 10); len(es) > 0 && es[0].Outcome != audit.OutcomeOK {
				t.Fatalf("the payee is blamed: %+v", es)
			}
			h := balanced(t, a)
			if h.Books.LostToMintSats != 10 || held(h, px.URL) != 90 || held(h, ms[0].URL) != 100 {
				t.Fatalf("after the kept melt: %+v %+v", h.Books, h.Mints)
			}
			if err := a.CheckHoldings(ctx); err != nil {
				t.Fatal(err)
			}
			if f := mintHolding(t, a, px.URL).Flag; f != nil {
				t.Fatalf("the wallet held proofs the mint spent: %+v", f)
			}
		})
	}
}
