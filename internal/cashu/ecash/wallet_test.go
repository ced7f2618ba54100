package ecash_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/nutshelltest"
)

var logger = slog.New(slog.NewTextHandler(io.Discard, nil))

// The mints every test can use: gonuts (v1 keysets, no fee return) and two
// Nutshell mints (v2 keysets, 100 ppk input fees, fee return): one whose
// Lightning payments settle at once, one whose payments stay pending until
// asked about.
var (
	gonutsMint *devmint.Mint
	nutshell   *nutshelltest.Mint
	pending    *nutshelltest.Mint
	noNutshell error
)

func TestMain(m *testing.M) {
	flag.Parse() // -short leaves Nutshell out
	dir, err := os.MkdirTemp("", "ecash-test")
	if err != nil {
		panic(err)
	}
	gonutsMint, err = devmint.Start(devmint.Options{Dir: filepath.Join(dir, "gonuts"), InputFeePpk: 200})
	if err != nil {
		panic(err)
	}
	nutshells, err := nutshelltest.StartPair(filepath.Join(dir, "nutshell"))
	nutshell, pending, noNutshell = nutshells.Settle, nutshells.Pending, err
	if noNutshell != nil && !errors.Is(noNutshell, nutshelltest.ErrNotInstalled) {
		panic(noNutshell)
	}
	code := m.Run()
	nutshells.Stop()
	gonutsMint.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mintUnderTest is a mint and how a test pays its invoices.
type mintUnderTest struct {
	name string
	url  string
	pay  func(t testing.TB, invoice string) // settles a deposit invoice of this mint
}

func mints(t testing.TB) []mintUnderTest {
	out := []mintUnderTest{{"gonuts", gonutsMint.URL, func(t testing.TB, inv string) {
		if err := gonutsMint.Node.PayInvoice(inv); err != nil {
			t.Fatal(err)
		}
	}}}
	if nutshell != nil {
		out = append(out, mintUnderTest{"nutshell", nutshell.URL, func(testing.TB, string) {}}) // FakeWallet pays its own invoices
	} else {
		t.Logf("Nutshell not available (%v): only the gonuts mint", noNutshell)
	}
	return out
}

func needNutshell(t *testing.T) {
	if nutshell == nil {
		testkit.Missing(t, "the Nutshell mint", noNutshell)
	}
}

type env struct {
	st *store.Store
	w  *ecash.Wallet
}

// open opens a wallet at mint on its own store (dir "" for a new one).
func open(t testing.TB, mint, dir string, mod ...func(*ecash.Config)) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := store.Open(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := ecash.Config{DB: st.DB, MintURL: mint, Log: logger, Timeout: 10 * time.Second, MeltTimeout: 20 * time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	w, err := ecash.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, w: w}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fund deposits sats into w by a paid mint quote.
func fund(t testing.TB, m mintUnderTest, w *ecash.Wallet, sats uint64) {
	t.Helper()
	ctx := ctxT(t)
	q, err := w.RequestMint(ctx, sats)
	if err != nil {
		t.Fatal(err)
	}
	m.pay(t, q.Request)
	waitFor(t, "the deposit to be minted", func() bool {
		st, err := w.CompleteMint(ctx, q.Quote)
		if err != nil {
			t.Logf("complete mint: %v", err)
		}
		return st == ecash.MintIssued
	})
	if st, err := w.CompleteMint(ctx, q.Quote); err != nil || st != ecash.MintIssued {
		t.Fatalf("again: %s %v", st, err)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, what, cond)
}

// audit checks that the wallet's balance is what the mint says its proofs
// are worth.
func audit(t *testing.T, w *ecash.Wallet) ecash.Audit {
	t.Helper()
	a, err := w.Audit(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if a.HeldSats != w.Balance() || a.UnspentSats != a.HeldSats || a.UnspentProofs != a.HeldProofs {
		t.Fatalf("balance %d, audit %+v", w.Balance(), a)
	}
	return a
}

// payout checks what PayoutIn reads of ref: what its caller books of it.
func payout(t *testing.T, e *env, ref string, want ecash.Payout) {
	t.Helper()
	var p ecash.Payout
	if err := e.st.DB.View(func(txn *kv.Txn) (err error) { p, err = e.w.PayoutIn(txn, ref); return err }); err != nil {
		t.Fatal(err)
	}
	if p != want {
		t.Fatalf("payout %s: %+v, want %+v", ref, p, want)
	}
}

// TestFlows: deposit, tokens out (cashuA and cashuB) and in, melts, with
// every fee counted, against each mint.
func TestFlows(t *testing.T) {
	t.Parallel()
	for _, m := range mints(t) {
		t.Run(m.name, func(t *testing.T) {
			ctx := ctxT(t)
			faucet, user := open(t, m.url, ""), open(t, m.url, "")
			fund(t, m, faucet.w, 1000)
			if faucet.w.Balance() != 1000 {
				t.Fatalf("balance %d", faucet.w.Balance())
			}
			before := faucet.w.Balance()
			for i, v3 := range []bool{false, true} {
				sent, err := faucet.w.Send(ctx, fmt.Sprintf("claim-%d", i), 25, 0)
				if err != nil {
					t.Fatal(err)
				}
				if sent.Amount != 25 || faucet.w.Balance() != before-25-sent.Fee {
					t.Fatalf("sent %+v, balance %d → %d", sent, before, faucet.w.Balance())
				}
				before = faucet.w.Balance()
				s, err := ecash.Token{Mint: m.url, Proofs: sent.Proofs}.Encode(v3)
				if err != nil {
					t.Fatal(err)
				}
				tok, err := ecash.DecodeToken(s)
				if err != nil {
					t.Fatal(err)
				}
				got, fee, err := user.w.Receive(ctx, "", tok.Proofs)
				if err != nil || got != 25 {
					t.Fatalf("the user received %d (fee %d) of %s: %v", got, fee, s[:6], err)
				}
				if _, _, err := user.w.Receive(ctx, "", tok.Proofs); !errors.Is(err, ecash.ErrSpent) {
					t.Fatalf("the same token again: %v", err)
				}
			}
			// Tidy forgets handed-out proofs the mint saw redeemed; Reclaim
			// then knows the tokens reached someone.
			if err := faucet.w.Tidy(ctx); err != nil {
				t.Fatal(err)
			}
			for _, ref := range []string{"claim-0", "claim-1"} {
				if made, redeemed, fee, err := faucet.w.Reclaim(ctx, ref); !made || !redeemed || fee == 0 || err != nil {
					t.Fatalf("reclaim %s: made %v redeemed %v fee %d %v", ref, made, redeemed, fee, err)
				}
			}
			// A token nobody redeemed comes back whole, less the fees.
			kept, err := faucet.w.Send(ctx, "never-delivered", 30, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := faucet.w.Tidy(ctx); err != nil {
				t.Fatal(err)
			}
			if made, redeemed, fee, err := faucet.w.Reclaim(ctx, "never-delivered"); made || redeemed || err != nil ||
				faucet.w.Balance() != before-fee || fee < kept.Fee-1 {
				t.Fatalf("reclaim: made %v redeemed %v fee %d (%v), balance %d, was %d", made, redeemed, fee, err, faucet.w.Balance(), before)
			}
			if _, _, _, err := faucet.w.Reclaim(ctx, "never-delivered"); err != nil {
				t.Fatal(err)
			}
			before = faucet.w.Balance()

			// A token the user makes comes back to the faucet.
			sent, err := user.w.Send(ctx, "", 20, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := faucet.w.Receive(ctx, "deposit", sent.Proofs)
			if err != nil || got != 20 || faucet.w.Balance() != before+20 {
				t.Fatalf("received %d: %v (balance %d, was %d)", got, err, faucet.w.Balance(), before)
			}
			before = faucet.w.Balance()

			// Pay the user's invoice.
			q, err := user.w.RequestMint(ctx, 30)
			if err != nil {
				t.Fatal(err)
			}
			mq, err := faucet.w.MeltQuote(ctx, q.Request)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := faucet.w.Melt(ctx, mq, faucet.w.Balance()); !errors.Is(err, ecash.ErrInsufficientFunds) {
				t.Fatalf("melting below what must be kept: %v", err)
			}
			p, err := faucet.w.Melt(ctx, mq, 0)
			if err != nil || p.State != ecash.Paid {
				t.Fatalf("melt %+v %v", p, err)
			}
			if faucet.w.Balance() != before-30-p.Fee {
				t.Fatalf("balance %d → %d after paying 30 + %d", before, faucet.w.Balance(), p.Fee)
			}
			waitFor(t, "the user's invoice to be paid", func() bool {
				st, _ := user.w.CompleteMint(ctx, q.Quote)
				return st == ecash.MintIssued
			})
			if again, err := faucet.w.Melt(ctx, mq, 0); err != nil || again.State != ecash.Paid {
				t.Fatalf("melting the quote again: %+v %v", again, err)
			}
			audit(t, faucet.w)
			audit(t, user.w)
		})
	}
}

// TestPendingMeltSettlesWithChange: a Lightning payment that stays pending
// settles later; its fee reserve comes back as change (NUT-08) then.
func TestPendingMeltSettlesWithChange(t *testing.T) {
	t.Parallel()
	needNutshell(t)
	ctx := ctxT(t)
	m := mintUnderTest{"pending", pending.URL, func(testing.TB, string) {}}
	faucet := open(t, pending.URL, "")
	fund(t, m, faucet.w, 500)
	user := open(t, nutshell.URL, "")
	q, err := user.w.RequestMint(ctx, 40) // an invoice of another mint: a real (fake) Lightning payment
	if err != nil {
		t.Fatal(err)
	}
	mq, err := faucet.w.MeltQuote(ctx, q.Request)
	if err != nil {
		t.Fatal(err)
	}
	if mq.FeeReserve == 0 {
		t.Fatalf("quote %+v: no fee reserve to return", mq)
	}
	before := faucet.w.Balance()
	p, err := faucet.w.Melt(ctx, mq, 0)
	if err != nil || p.State != ecash.Pending {
		t.Fatalf("melt %+v %v", p, err)
	}
	if b := faucet.w.Balance(); b >= before-40 {
		t.Fatalf("balance %d while the payment is in flight (was %d)", b, before)
	}
	p, err = faucet.w.MeltStatus(ctx, mq.Quote)
	if err != nil || p.State != ecash.Paid {
		t.Fatalf("status %+v %v", p, err)
	}
	if p.Change == 0 {
		t.Fatalf("no fee returned: %+v", p)
	}
	if faucet.w.Balance() != before-40-p.Fee {
		t.Fatalf("balance %d, want %d - 40 - fee %d", faucet.w.Balance(), before, p.Fee)
	}
	audit(t, faucet.w)
}

// lossy forwards requests to the mint but, for paths it is told to,
// returns an error instead of the answer: the mint did the work, the
// wallet never heard.
type lossy struct {
	next  http.RoundTripper
	mu    sync.Mutex
	lose  map[string]int           // path → answers to lose
	block map[string]int           // path → requests to drop before they reach the mint
	late  map[string]chan struct{} // path → deliver the next request once the channel is closed, answering the wallet with an error at once
	lost  atomic.Int32
}

func (l *lossy) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	drop, lose, late := l.block[r.URL.Path] > 0, l.lose[r.URL.Path] > 0, l.late[r.URL.Path]
	if drop {
		l.block[r.URL.Path]--
	} else if lose {
		l.lose[r.URL.Path]--
	}
	delete(l.late, r.URL.Path)
	l.mu.Unlock()
	if late != nil {
		body, _ := io.ReadAll(r.Body)
		go func() {
			<-late
			req, _ := http.NewRequest(r.Method, r.URL.String(), bytes.NewReader(body))
			req.Header = r.Header
			if resp, err := l.next.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}()
		return nil, errors.New("lossy: timeout, the request is still on its way")
	}
	if drop {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("lossy: connection refused")}
	}
	resp, err := l.next.RoundTrip(r)
	if err == nil && lose {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		l.lost.Add(1)
		return nil, errors.New("lossy: connection reset after the mint answered")
	}
	return resp, err
}

// TestLostAnswers: the mint signs but the answer never arrives (the crash
// between signing and recording that broke gonuts' wallet). The operation
// is in the store; reopening the wallet settles it from the mint (NUT-09
// restore, NUT-07 states), the balance is exact, and later operations
// never reuse an output.
func TestLostAnswers(t *testing.T) {
	t.Parallel()
	for _, m := range mints(t) {
		t.Run(m.name, func(t *testing.T) {
			ctx := ctxT(t)
			dir := t.TempDir()
			tr := &lossy{next: http.DefaultTransport, lose: map[string]int{}, block: map[string]int{}, late: map[string]chan struct{}{}}
			lossyHTTP := func(c *ecash.Config) { c.HTTP = &http.Client{Transport: tr} }
			e := open(t, m.url, dir, lossyHTTP)
			fund(t, m, e.w, 300)

			// A deposit whose minting answer is lost: the wallet restores it.
			q, err := e.w.RequestMint(ctx, 64)
			if err != nil {
				t.Fatal(err)
			}
			m.pay(t, q.Request)
			tr.lose["/v1/mint/bolt11"] = 1
			waitFor(t, "the deposit", func() bool {
				st, _ := e.w.CompleteMint(ctx, q.Quote)
				return st == ecash.MintIssued
			})
			if tr.lost.Load() != 1 || e.w.Balance() != 364 {
				t.Fatalf("lost %d answers, balance %d", tr.lost.Load(), e.w.Balance())
			}

			// A send whose swap answer is lost: no token, and the outputs
			// are the wallet's.
			tr.lose["/v1/swap"] = 1
			before := e.w.Balance()
			if _, err := e.w.Send(ctx, "lost-send", 10, 0); err == nil {
				t.Fatal("a token although the answer was lost")
			}
			a := audit(t, e.w)
			if a.HeldSats > before || a.HeldSats < before-2 {
				t.Fatalf("balance %d after a lost swap (was %d): only the input fee may be gone", a.HeldSats, before)
			}

			// The same, but the process dies before it can ask: a reopened
			// wallet settles the operation.
			tr.lose["/v1/swap"], tr.block["/v1/restore"] = 1, 1
			before = e.w.Balance()
			if _, err := e.w.Send(ctx, "crash-send", 10, 0); err == nil {
				t.Fatal("a token although the answer was lost")
			}
			if e.w.Balance() >= before {
				t.Fatalf("balance %d: the inputs of the open operation are counted", e.w.Balance())
			}
			e.st.Close()
			e2 := open(t, m.url, dir)
			if n, err := e2.w.Recover(ctx); err != nil || n != 0 {
				t.Fatalf("recover: %d left, %v", n, err)
			}
			// The token was never made: its outputs are the wallet's, and
			// the payout it was for must not count as paid.
			if made, redeemed, _, err := e2.w.Reclaim(ctx, "crash-send"); made || redeemed || err != nil {
				t.Fatalf("reclaim after recovery: made %v redeemed %v %v", made, redeemed, err)
			}
			a = audit(t, e2.w)
			if a.HeldSats > before || a.HeldSats < before-2 {
				t.Fatalf("balance %d after recovery (was %d)", a.HeldSats, before)
			}
			// A request that never reached the mint: its inputs come back whole.
			e2.st.Close()
			tr.block["/v1/swap"] = 1
			e3 := open(t, m.url, dir, lossyHTTP)
			before = e3.w.Balance()
			if _, err := e3.w.Send(ctx, "never-sent", 10, 0); err == nil {
				t.Fatal("a token without a swap")
			}
			if e3.w.Balance() != before {
				t.Fatalf("balance %d, was %d: a swap that never left cost something", e3.w.Balance(), before)
			}
			// Every later operation works: no counter was used twice.
			for range 5 {
				if _, err := e3.w.Send(ctx, "", 3, 0); err != nil {
					t.Fatal(err)
				}
			}
			audit(t, e3.w)
		})
	}
}

// TestConcurrentSends: operations run side by side, each with its own
// inputs and outputs.
func TestConcurrentSends(t *testing.T) {
	t.Parallel()
	for _, m := range mints(t) {
		t.Run(m.name, func(t *testing.T) {
			ctx := ctxT(t)
			e := open(t, m.url, "")
			fund(t, m, e.w, 2000)
			var spent atomic.Uint64
			testkit.Concurrently(t, 12, func(i int) error {
				s, err := e.w.Send(ctx, fmt.Sprint("c", i), uint64(5+i), 0)
				if err == nil {
					spent.Add(s.Amount + s.Fee)
				}
				return err
			})
			if e.w.Balance() != 2000-spent.Load() {
				t.Fatalf("balance %d, spent %d", e.w.Balance(), spent.Load())
			}
			audit(t, e.w)
		})
	}
}

// beforeRotation is a wallet funded with 300 sats at a Nutshell mint of
// one keyset (old), about to rotate it, and a token of 10 sats of that
// keyset the wallet sent, held by a user.
func beforeRotation(t *testing.T) (first *nutshelltest.Mint, e *env, old []ecash.Keyset, sent ecash.Sent) {
	t.Helper()
	needNutshell(t)
	first = nutshelltest.StartT(t, nutshelltest.Options{Name: "rotating mint"})
	e = open(t, first.URL, "")
	fund(t, mintUnderTest{"rotating", first.URL, func(testing.TB, string) {}}, e.w, 300)
	old = e.w.Keysets()
	if len(old) != 1 || !strings.HasPrefix(old[0].ID, "01") {
		t.Fatalf("keysets %+v", old)
	}
	sent, err := e.w.Send(ctxT(t), "", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	return first, e, old, sent
}

// TestRotatedKeyset: the mint retires its keyset for a new one; the wallet
// learns it, makes new outputs with the new keyset, and moves its proofs
// of the old one over (NUT-02).
func TestRotatedKeyset(t *testing.T) {
	t.Parallel()
	first, e, old, sent := beforeRotation(t)
	first.Stop()
	// A second active keyset first (a new derivation path), then the old one retired.
	second := nutshelltest.StartT(t, nutshelltest.Options{Dir: first.Dir, Port: first.Port, Env: []string{"MINT_DERIVATION_PATH=m/0'/0'/1'"}})
	ctx := ctxT(t) // a mint's start may take a while on a busy machine
	if err := e.w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ks := e.w.Keysets(); len(ks) != 2 || !ks[0].Active || !ks[1].Active {
		t.Fatalf("two active keysets expected: %+v", ks)
	}
	if _, err := e.w.Send(ctx, "", 7, 0); err != nil {
		t.Fatal(err)
	}
	second.Stop()
	if err := nutshelltest.SetKeysetActive(first.Dir, old[0].ID, false); err != nil {
		t.Fatal(err)
	}
	nutshelltest.StartT(t, nutshelltest.Options{Dir: first.Dir, Port: first.Port, Env: []string{"MINT_DERIVATION_PATH=m/0'/0'/1'"}})
	ctx = ctxT(t)
	if err := e.w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if a := audit(t, e.w); a.ByKeyset[old[0].ID] == 0 {
		t.Fatalf("no proofs of the old keyset to move: %+v", a)
	}
	if err := e.w.Tidy(ctx); err != nil {
		t.Fatal(err)
	}
	a := audit(t, e.w)
	if a.ByKeyset[old[0].ID] != 0 || len(a.ByKeyset) != 1 {
		t.Fatalf("after Tidy: %+v", a.ByKeyset)
	}
	for _, k := range e.w.Keysets() {
		if k.ID == old[0].ID && k.Active {
			t.Fatal("the retired keyset is still active")
		}
	}
	// The user's token of the retired keyset is still good (inputs of
	// inactive keysets are accepted), and comes back to the wallet.
	got, _, err := e.w.Receive(ctx, "", sent.Proofs)
	if err != nil || got != 10 {
		t.Fatalf("received %d: %v", got, err)
	}
	if _, err := e.w.Send(ctx, "", 50, 0); err != nil {
		t.Fatal(err)
	}
	if b := audit(t, e.w); b.HeldSats == 0 || a.HeldSats == 0 {
		t.Fatal("empty")
	}
}

// TestLateRequest: a swap request the wallet gave up on reaches the mint
// after all. Its inputs must not be spendable again meanwhile, and once the
// mint has made the swap, its outputs are the wallet's.
func TestLateRequest(t *testing.T) {
	t.Parallel()
	for _, m := range mints(t) {
		t.Run(m.name, func(t *testing.T) {
			ctx := ctxT(t)
			tr := &lossy{next: http.DefaultTransport, lose: map[string]int{}, block: map[string]int{}, late: map[string]chan struct{}{}}
			e := open(t, m.url, "", func(c *ecash.Config) { c.HTTP, c.Timeout = &http.Client{Transport: tr}, 2*time.Second })
			fund(t, m, e.w, 200)
			release := make(chan struct{})
			tr.late["/v1/swap"] = release
			s, err := e.w.Send(ctx, "late", 10, 0)
			if err == nil {
				t.Fatal("a token without an answer")
			}
			if n, _ := e.w.Recover(ctx); n != 1 || e.w.Balance() == 200 {
				t.Fatalf("%d open, balance %d: the inputs of a request still on its way are spendable", n, e.w.Balance())
			}
			close(release) // the swap reaches the mint now
			waitFor(t, "the late swap to be settled", func() bool {
				n, _ := e.w.Recover(ctx)
				return n == 0
			})
			if a := audit(t, e.w); a.HeldSats < 198 {
				t.Fatalf("after the late swap: %+v", a)
			}
			// The swap's input fee was paid although Send returned before
			// the mint made the swap (and said it cost s.Fee, nothing):
			// the wallet books it; taking the payout back, which finds no
			// token was made, does not book it again.
			books(t, e.w, 200, s.Fee)
			payout(t, e, "late", ecash.Payout{}) // nor does its caller
			made, redeemed, fee, err := e.w.Reclaim(ctx, "late")
			if made || redeemed || err != nil || fee != 0 {
				t.Fatalf("reclaim: made %v redeemed %v fee %d %v", made, redeemed, fee, err)
			}
		})
	}
}

// meltQuote is w's melt quote for an invoice of sats of a new user's at
// mint m.
func meltQuote(t *testing.T, m mintUnderTest, w *ecash.Wallet, sats uint64) ecash.MeltQuote {
	t.Helper()
	user := open(t, m.url, "")
	q, err := user.w.RequestMint(ctxT(t), sats)
	if err != nil {
		t.Fatal(err)
	}
	mq, err := w.MeltQuote(ctxT(t), q.Request)
	if err != nil {
		t.Fatal(err)
	}
	return mq
}

// TestLateSplit: the swap that makes exact proofs for a melt (gonuts
// returns no change) reaches the mint after Melt gave up on it. The melt
// never began; once the split is settled its fee is booked by the wallet,
// and asking about the payment does not report it again.
func TestLateSplit(t *testing.T) {
	t.Parallel()
	m := mints(t)[0]
	ctx := ctxT(t)
	tr := &lossy{next: http.DefaultTransport, lose: map[string]int{}, block: map[string]int{}, late: map[string]chan struct{}{}}
	e := open(t, m.url, "", func(c *ecash.Config) { c.HTTP, c.Timeout = &http.Client{Transport: tr}, 2*time.Second })
	fund(t, m, e.w, 200)
	mq := meltQuote(t, m, e.w, 37)
	release := make(chan struct{})
	tr.late["/v1/swap"] = release
	p, err := e.w.Melt(ctx, mq, 0)
	if err == nil {
		t.Fatalf("a melt although its inputs were never made: %+v", p)
	}
	close(release)
	waitFor(t, "the late split to be settled", func() bool {
		n, _ := e.w.Recover(ctx)
		return n == 0
	})
	books(t, e.w, 200, p.Fee)
	payout(t, e, mq.Quote, ecash.Payout{}) // nor does its caller
	st, err := e.w.MeltStatus(ctx, mq.Quote)
	if err != nil || st.State != ecash.Unpaid || st.Fee != 0 {
		t.Fatalf("status of the melt that never began: %+v %v", st, err)
	}
	p2, err := e.w.Melt(ctx, mq, 0)
	if err != nil || p2.State != ecash.Paid {
		t.Fatalf("melt again: %+v %v", p2, err)
	}
	books(t, e.w, 200, p.Fee+37+p2.Fee)
	payout(t, e, mq.Quote, ecash.Payout{Paid: true, Fee: p2.Fee})
	audit(t, e.w)
}

// TestMeltNotSentAfterSplit: a melt's exact inputs were made (a split,
// which paid its input fee), then the melt never left (no connection could
// be made). Nothing was attempted, but the split was paid for: Melt must
// say so, as MeltStatus does, or its caller books the failure at no cost
// and its books are short by the split's fee for good.
func TestMeltNotSentAfterSplit(t *testing.T) {
	t.Parallel()
	m := mints(t)[0]
	ctx := ctxT(t)
	tr := &lossy{next: http.DefaultTransport, lose: map[string]int{}, block: map[string]int{"/v1/melt/bolt11": 1}, late: map[string]chan struct{}{}}
	e := open(t, m.url, "", func(c *ecash.Config) { c.HTTP = &http.Client{Transport: tr} })
	fund(t, m, e.w, 200)
	mq := meltQuote(t, m, e.w, 37)
	p, err := e.w.Melt(ctx, mq, 0)
	if err == nil || p.State == ecash.Paid {
		t.Fatalf("a melt that never left: %+v %v", p, err)
	}
	if p.Fee == 0 {
		t.Fatalf("the split before the melt cost nothing, says Melt: %+v %v", p, err)
	}
	books(t, e.w, 200, p.Fee)
	st, err := e.w.MeltStatus(ctx, mq.Quote)
	if err != nil || st.State != ecash.Unpaid || st.Fee != p.Fee {
		t.Fatalf("status of the melt that never left: %+v %v, Melt said %+v", st, err, p)
	}
	audit(t, e.w)
}

// TestLateReclaim: taking back a token nobody was given (its payout's
// process stopped before it handed it out), the swap reaches the mint only
// after the wallet gave up on it. Asked again, the wallet must find the
// token back, not take its spent proofs for the receiver's redeeming it:
// the payout would be booked paid while its sats are in the balance.
func TestLateReclaim(t *testing.T) {
	t.Parallel()
	m := mints(t)[0]
	ctx := ctxT(t)
	tr := &lossy{next: http.DefaultTransport, lose: map[string]int{}, block: map[string]int{}, late: map[string]chan struct{}{}}
	e := open(t, m.url, "", func(c *ecash.Config) { c.HTTP, c.Timeout = &http.Client{Transport: tr}, 2*time.Second })
	fund(t, m, e.w, 200)
	s, err := e.w.Send(ctx, "payout", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	payout(t, e, "payout", ecash.Payout{Paid: true, Fee: s.Fee})
	release := make(chan struct{})
	tr.late["/v1/swap"] = release
	if made, redeemed, _, err := e.w.Reclaim(ctx, "payout"); err == nil || !made || redeemed {
		t.Fatalf("reclaim without an answer: made %v redeemed %v %v", made, redeemed, err)
	}
	close(release)
	waitFor(t, "the late swap to reach the mint", func() bool {
		st, err := e.w.States(ctx, s.Proofs)
		return err == nil && st[0] == ecash.Spent
	})
	made, redeemed, fee, err := e.w.Reclaim(ctx, "payout")
	if made || redeemed || err != nil {
		t.Fatalf("reclaim once the late swap was made: made %v redeemed %v %v", made, redeemed, err)
	}
	if n, err := e.w.Recover(ctx); n != 0 || err != nil {
		t.Fatalf("recover: %d open, %v", n, err)
	}
	books(t, e.w, 200, fee)
	payout(t, e, "payout", ecash.Payout{Fee: fee}) // the token is back
	audit(t, e.w)
}

// TestLateMelt: a melt request the wallet gave up on reaches the mint
// after all and pays. Asking about the payment then finds it paid, and
// what it cost is in the books, once.
func TestLateMelt(t *testing.T) {
	t.Parallel()
	m := mints(t)[0]
	ctx := ctxT(t)
	tr := &lossy{next: http.DefaultTransport, lose: map[string]int{}, block: map[string]int{}, late: map[string]chan struct{}{}}
	e := open(t, m.url, "", func(c *ecash.Config) { c.HTTP, c.MeltTimeout = &http.Client{Transport: tr}, 2*time.Second })
	fund(t, m, e.w, 200)
	user := open(t, m.url, "")
	q, err := user.w.RequestMint(ctx, 37)
	if err != nil {
		t.Fatal(err)
	}
	mq, err := e.w.MeltQuote(ctx, q.Request)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	tr.late["/v1/melt/bolt11"] = release
	p, err := e.w.Melt(ctx, mq, 0)
	if err == nil && p.State == ecash.Paid {
		t.Fatalf("paid without an answer: %+v", p)
	}
	t.Logf("melt without an answer: %+v %v", p, err)
	close(release)
	waitFor(t, "the late melt to be paid", func() bool {
		p, err = e.w.MeltStatus(ctx, mq.Quote)
		return err == nil && p.State == ecash.Paid
	})
	if n, err := e.w.Recover(ctx); n != 0 || err != nil {
		t.Fatalf("recover: %d open, %v", n, err)
	}
	books(t, e.w, 200, 37+p.Fee)
	payout(t, e, mq.Quote, ecash.Payout{Paid: true, Fee: p.Fee})
	audit(t, e.w)
	if st, err := user.w.CompleteMint(ctx, q.Quote); err != nil || st != ecash.MintIssued {
		t.Fatalf("the invoice was not paid: %s %v", st, err)
	}
}

// TestRotationWhileRunning: the mint retires its keyset for a new one
// while the wallet has the old one loaded (issue #24: every claim failed
// with "keyset id inactive" until the periodic check). The first send
// after the rotation is refused for its outputs' keyset, and goes through
// at once with the new keyset; the wallet's proofs of the old keyset move
// over with the fee booked as housekeeping, and the books balance.
func TestRotationWhileRunning(t *testing.T) {
	t.Parallel()
	first, e, old, sent := beforeRotation(t)
	m := mintUnderTest{"rotating", first.URL, func(testing.TB, string) {}}
	out := sent.Amount + sent.Fee
	first.Stop()
	if err := nutshelltest.SetKeysetActive(first.Dir, old[0].ID, false); err != nil {
		t.Fatal(err)
	}
	nutshelltest.StartT(t, nutshelltest.Options{Dir: first.Dir, Port: first.Port, Env: []string{"MINT_DERIVATION_PATH=m/0'/0'/1'"}})
	ctx := ctxT(t)
	s, err := e.w.Send(ctx, "", 21, 0)
	if err != nil {
		t.Fatalf("the first send after the rotation: %v", err)
	}
	out += s.Amount + s.Fee
	if s.Proofs[0].Id == old[0].ID {
		t.Fatal("the token is of the retired keyset")
	}
	redeem(t, m, s.Proofs, 21)
	books(t, e.w, 300, out)
	if err := e.w.Tidy(ctx); err != nil {
		t.Fatal(err)
	}
	if a := audit(t, e.w); a.ByKeyset[old[0].ID] != 0 {
		t.Fatalf("after Tidy: %+v", a.ByKeyset)
	}
	if _, tot, _ := e.w.Books(); tot.InternalFeeSats == 0 {
		t.Fatalf("moving the old keyset's proofs cost nothing? %+v", tot)
	}
	books(t, e.w, 300, out)
	// The user's token of the retired keyset still redeems.
	redeem(t, m, sent.Proofs, 10)
}

// TestPrefixesShareNothing: the auditor's wallet (its own prefix) and the
// faucet's at the same mint in one store hold their own proofs, so neither
// spends or counts the other's sats.
func TestPrefixesShareNothing(t *testing.T) {
	t.Parallel()
	m := mints(t)[0]
	faucet := open(t, m.url, "")
	auditor, err := ecash.Open(ecash.Config{DB: faucet.st.DB, MintURL: m.url, Log: logger, Prefix: kv.PrefixAuditWallet})
	if err != nil {
		t.Fatal(err)
	}
	fund(t, m, faucet.w, 64)
	if got := auditor.Balance(); got != 0 {
		t.Fatalf("the auditor's wallet sees %d sats of the faucet's", got)
	}
	fund(t, m, auditor, 32)
	if f, a := faucet.w.Balance(), auditor.Balance(); f != 64 || a != 32 {
		t.Fatalf("faucet %d, auditor %d; want 64 and 32", f, a)
	}
	if _, err := auditor.Send(ctxT(t), "out", 16, 0); err != nil {
		t.Fatal(err)
	}
	if f := faucet.w.Balance(); f != 64 {
		t.Fatalf("the auditor's send took the faucet's sats: faucet %d", f)
	}
}
