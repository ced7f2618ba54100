package audit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
)

var logger = slog.New(slog.NewTextHandler(io.Discard, nil))

// mints starts n gonuts mints on one fake Lightning network, so a melt at
// one pays a mint quote at another.
func mints(t *testing.T, n int) []*devmint.Mint { return feeMints(t, n, 0) }

// feeMints are mints that charge inputFeePpk per input (NUT-02).
func feeMints(t *testing.T, n int, inputFeePpk uint) []*devmint.Mint {
	t.Helper()
	network := &devmint.Network{}
	var out []*devmint.Mint
	for i := range n {
		dir := filepath.Join(t.TempDir(), "mint", string(rune('a'+i)))
		node, err := network.NewNode(filepath.Join(t.TempDir(), "ln.json"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := devmint.Start(devmint.Options{Dir: dir, Node: node, InputFeePpk: inputFeePpk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(); node.Close() })
		out = append(out, m)
	}
	return out
}

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newAuditor(t *testing.T, st *store.Store, client *http.Client) *audit.Auditor {
	t.Helper()
	return newAuditorWaiting(t, st, client, 20*time.Second)
}

// newAuditorWaiting is newAuditor whose rounds wait payeeWait for the
// payee to see a payment.
func newAuditorWaiting(t *testing.T, st *store.Store, client *http.Client, payeeWait time.Duration) *audit.Auditor {
	t.Helper()
	a, err := audit.New(audit.Config{Settings: audit.DefaultSettings(), DB: st.DB, Log: logger, HTTP: client,
		Timeout: 10 * time.Second, PayeeWait: payeeWait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fund deposits sats at m by a quote its own node pays.
func fund(t *testing.T, a *audit.Auditor, m *devmint.Mint, sats int64) {
	t.Helper()
	ctx := ctxT(t)
	d, err := a.DepositQuote(ctx, m.URL, sats)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Node.PayInvoice(d.Invoice); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 90*time.Second, "the deposit minted", func() bool {
		if d, err = a.Deposit(ctx, d.ID); err != nil && ctx.Err() != nil {
			t.Fatalf("deposit not minted: %v", err)
		}
		if d.State == audit.DepositFailed {
			t.Fatalf("deposit failed: %+v", d)
		}
		return d.State == audit.DepositDone
	})
}

func balanced(t *testing.T, a *audit.Auditor) audit.Holdings {
	t.Helper()
	h, err := a.Holdings()
	if err != nil {
		t.Fatal(err)
	}
	if !h.Books.Balanced {
		t.Fatalf("the books do not balance: %+v", h.Books)
	}
	return h
}

func held(h audit.Holdings, mint string) uint64 {
	for _, m := range h.Mints {
		if m.MintURL == mint {
			return m.HeldSats
		}
	}
	return 0
}

// TestRound: one honest round moves the amount from the payer to the
// payee, within the fee reserve, with both mints' entries ok and the books
// balanced; the next round by need is never the same pair.
func TestRound(t *testing.T) {
	t.Parallel()
	ms := mints(t, 3)
	st := openStore(t, t.TempDir())
	defer st.Close()
	a := newAuditor(t, st, nil)
	for _, m := range ms[:2] {
		fund(t, a, m, 200)
	}
	if h := balanced(t, a); h.Books.DepositedSats != 400 || h.Books.HeldSats != 400 {
		t.Fatalf("books after deposits: %+v", h.Books)
	}
	r, err := a.Audit(ctxT(t), ms[1].URL, ms[0].URL, 21)
	if err != nil || r.Outcome != audit.OutcomeOK {
		t.Fatalf("round: %+v %v", r, err)
	}
	if r.Fee > r.FeeReserve {
		t.Errorf("fee %d over the reserve %d", r.Fee, r.FeeReserve)
	}
	h := balanced(t, a)
	if held(h, ms[0].URL) != 221 || held(h, ms[1].URL) != 179-r.Fee {
		t.Fatalf("holdings after the round: %+v", h.Mints)
	}
	for _, c := range []struct{ mint, role string }{{ms[0].URL, audit.RolePayee}, {ms[1].URL, audit.RolePayer}} {
		es, _, err := a.Entries(c.mint, 0, 10)
		if err != nil || len(es) != 1 || es[0].Role != c.role || es[0].Outcome != audit.OutcomeOK || es[0].AmountSats != 21 {
			t.Fatalf("entries of the %s: %+v %v", c.role, es, err)
		}
		s, err := a.Summary(c.mint)
		if err != nil || s.Audits30d != 1 || s.SuccessRate30d == nil || *s.SuccessRate30d != 1 || s.LastAuditFailureAt != nil {
			t.Fatalf("summary of the %s: %+v %v", c.role, s, err)
		}
	}
	fund(t, a, ms[2], 100)
	last := [2]string{r.Payer, r.Payee}
	for range 3 {
		r, err := a.RunRound(ctxT(t))
		if err != nil || r.Outcome != audit.OutcomeOK {
			t.Fatalf("round by need: %+v %v", r, err)
		}
		if [2]string{r.Payer, r.Payee} == last {
			t.Fatalf("the same pair twice in a row: %v", last)
		}
		last = [2]string{r.Payer, r.Payee}
		balanced(t, a)
	}
}

// dying is a transport that dies, as a killed process does, once a
// request to a path containing at has left: that request reaches the mint,
// its answer and every later request are lost.
type dying struct {
	at   string
	dead atomic.Bool
}

func (d *dying) RoundTrip(r *http.Request) (*http.Response, error) {
	if d.dead.Load() {
		return nil, errors.New("killed")
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if strings.Contains(r.URL.Path, d.at) {
		d.dead.Store(true)
		if err == nil {
			resp.Body.Close()
		}
		return nil, errors.New("killed")
	}
	return resp, err
}

// TestResumeAfterDeath: a round whose connection to the mints died (as a killed process's does) after each of its
// requests is finished after a restart, from what the mints say: paid and
// minted once, the books balanced.
func TestResumeAfterDeath(t *testing.T) {
	t.Parallel()
	ms := mints(t, 2)
	for _, at := range []string{"/v1/mint/quote", "/v1/melt/quote", "/v1/melt/bolt11", "/v1/mint/bolt11"} {
		t.Run(strings.ReplaceAll(at, "/", "_"), func(t *testing.T) {
			t.Parallel() // a store and wallets of its own; the mints serve all four
			dir := t.TempDir()
			st := openStore(t, dir)
			a := newAuditor(t, st, nil)
			for _, m := range ms {
				fund(t, a, m, 100)
			}
			before := balanced(t, a)
			d := &dying{at: at}
			// A killed process does not wait for the payee: this one's
			// requests fail from the kill on, and it gives up after a
			// moment instead of the 20 s the payee could take.
			killed := newAuditorWaiting(t, st, &http.Client{Transport: d}, time.Second)
			r, _ := killed.Audit(ctxT(t), ms[1].URL, ms[0].URL, 10)
			if !d.dead.Load() {
				t.Fatalf("the round never reached %s: %+v", at, r)
			}
			killed.Close()
			a.Close()
			st.Close()

			st = openStore(t, dir)
			defer st.Close()
			a = newAuditor(t, st, nil)
			if err := a.Resume(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			h := balanced(t, a)
			moved := held(h, ms[0].URL) - held(before, ms[0].URL)
			es, _, _ := a.Entries(ms[0].URL, 0, 10)
			t.Logf("after the kill at %s: moved %d, payee entries %+v", at, moved, es)
			if h.Books.InFlightSats != 0 || h.Books.LostToMintSats != 0 {
				t.Fatalf("sats left in flight or lost: %+v", h.Books)
			}
			if moved != 0 && moved != 10 {
				t.Fatalf("the payee gained %d sats", moved)
			}
		})
	}
}

// TestRoundsWithInputFees: at mints that charge for every input, rounds
// in both directions keep the books balanced, every fee counted.
func TestRoundsWithInputFees(t *testing.T) {
	t.Parallel()
	ms := feeMints(t, 2, 300)
	st := openStore(t, t.TempDir())
	defer st.Close()
	a := newAuditor(t, st, nil)
	for _, m := range ms {
		fund(t, a, m, 300)
	}
	for i := range 4 {
		payer, payee := ms[i%2], ms[1-i%2]
		r, err := a.Audit(ctxT(t), payer.URL, payee.URL, uint64(17+i))
		if err != nil || r.Outcome != audit.OutcomeOK {
			t.Fatalf("round %d: %+v %v", i, r, err)
		}
		if h := balanced(t, a); h.Books.FeesPaidSats == 0 {
			t.Fatalf("no fees booked at mints that charge them: %+v", h.Books)
		}
	}
}

// TestUnpaidDepositExpires: a deposit quote never paid is given up a day
// past its expiry, and no longer holds room under the cap.
func TestUnpaidDepositExpires(t *testing.T) {
	t.Parallel()
	ms := mints(t, 1)
	st := openStore(t, t.TempDir())
	defer st.Close()
	clock := testkit.NewClock(time.Now())
	a, err := audit.New(audit.Config{Settings: audit.DefaultSettings(), DB: st.DB, Log: logger, Now: clock.Now, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d, err := a.DepositQuote(ctxT(t), ms[0].URL, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.DepositQuote(ctxT(t), ms[0].URL, 1); err == nil {
		t.Fatal("a deposit over the cap was taken")
	}
	clock.Add(26 * time.Hour)
	if err := a.SettleDeposits(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if d, err = a.Deposit(ctxT(t), d.ID); err != nil || d.State != audit.DepositFailed {
		t.Fatalf("the unpaid deposit: %+v %v", d, err)
	}
	if _, err := a.DepositQuote(ctxT(t), ms[0].URL, 1000); err != nil {
		t.Fatalf("the expired deposit still holds room: %v", err)
	}
	balanced(t, a)
}
