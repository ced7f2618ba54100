package audit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

// The child of TestKillAtEveryStep: rounds between two mints on the store
// in AUDIT_CHILD_DIR until it is killed.
func init() {
	dir := os.Getenv("AUDIT_CHILD_DIR")
	if dir == "" {
		return
	}
	err := runChild(dir, os.Getenv("AUDIT_PAYER"), os.Getenv("AUDIT_PAYEE"))
	fmt.Fprintln(os.Stderr, "child:", err)
	os.Exit(3)
}

func runChild(dir, payer, payee string) error {
	st, err := store.Open(dir, logger)
	if err != nil {
		return err
	}
	a, err := audit.New(audit.Config{Settings: audit.DefaultSettings(), DB: st.DB, Log: logger, Timeout: 10 * time.Second, PayeeWait: 20 * time.Second})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Resume(ctx); err != nil {
		return err
	}
	for i := range 3 {
		p, q := payer, payee
		if i%2 == 1 {
			p, q = payee, payer
		}
		if _, err := a.Audit(ctx, p, q, 10); err != nil {
			return err
		}
	}
	return nil
}

// killer is a mint's front that kills the child with SIGKILL once the mint
// has acted on the request the test names, before its answer leaves: a
// kill -9 at that step.
type killer struct {
	rp *httputil.ReverseProxy

	mu    sync.Mutex
	at    string // a path prefix, "" for none
	child *os.Process
	fired chan struct{}
}

func newKiller(t *testing.T, mint string) (*killer, string) {
	u, _ := url.Parse(mint)
	k := &killer{rp: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	return k, srv.URL
}

func (k *killer) arm(at string, child *os.Process, fired chan struct{}) {
	k.mu.Lock()
	k.at, k.child, k.fired = at, child, fired
	k.mu.Unlock()
}

func (k *killer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	fire := k.at != "" && strings.HasPrefix(r.Method+" "+r.URL.Path, k.at)
	k.mu.Unlock()
	if !fire {
		k.rp.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	k.rp.ServeHTTP(rec, r) // the mint acts
	k.mu.Lock()
	if k.child != nil {
		k.child.Signal(syscall.SIGKILL)
		k.child = nil
		close(k.fired)
	}
	k.at = ""
	k.mu.Unlock()
	io.WriteString(w, "") // the answer never reaches the dead child
}

// TestKillAtEveryStep: 20 rounds, each killed with SIGKILL at one of its
// steps (after the mint acted on the request), then resumed by a new
// process: every round ends paid, or failed with its sats accounted for,
// and the books balance after each restart.
func TestKillAtEveryStep(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("20 child processes")
	}
	ms := mints(t, 2)
	ka, urlA := newKiller(t, ms[0].URL)
	kb, urlB := newKiller(t, ms[1].URL)
	dir := t.TempDir()
	st := openStore(t, dir)
	a := newAuditor(t, st, nil)
	for _, m := range []struct {
		url  string
		node interface{ PayInvoice(string) error }
	}{{urlA, ms[0].Node}, {urlB, ms[1].Node}} {
		d, err := a.DepositQuote(ctxT(t), m.url, 300)
		if err != nil {
			t.Fatal(err)
		}
		m.node.PayInvoice(d.Invoice)
		for d.State != audit.DepositDone {
			d, _ = a.Deposit(ctxT(t), d.ID)
		}
	}
	a.Close()
	st.Close()
	// Each step's request, at the payee (a) or the payer (b) of a round
	// from b to a; rounds alternate, so both mints play both roles. After
	// a kill at a step marked leave, the recovery is left to the next
	// child (the books are checked without it), so that a restore (NUT-09)
	// of the mint's lost answer is a step to kill too.
	steps := []struct {
		k     *killer
		at    string
		leave bool
	}{
		{ka, "POST /v1/mint/quote/bolt11", false}, {kb, "POST /v1/melt/quote/bolt11", false}, {kb, "POST /v1/melt/bolt11", false},
		{ka, "GET /v1/mint/quote/bolt11/", false}, {ka, "POST /v1/mint/bolt11", true}, {ka, "POST /v1/restore", false}, {kb, "POST /v1/swap", false},
	}
	exe, _ := os.Executable()
	killed := 0
	for i := range 20 {
		s := steps[i%len(steps)]
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "AUDIT_CHILD_DIR="+dir, "AUDIT_PAYER="+urlB, "AUDIT_PAYEE="+urlA)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fired := make(chan struct{})
		s.k.arm(s.at, cmd.Process, fired)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-fired:
			<-done
			killed++
		case err := <-done:
			// Both may be ready at once: a SIGKILL (only the killer sends
			// one here) is what ended it.
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killed++
			} else {
				t.Logf("kill %d at %s never fired: the child ended (%v) %s", i, s.at, err, stderr.String())
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("kill %d at %s: the child hung", i, s.at)
		}
		s.k.arm("", nil, nil)

		st := openStore(t, dir)
		a := newAuditor(t, st, nil)
		if s.leave {
			balanced(t, a)
			a.Close()
			st.Close()
			continue
		}
		if err := a.Resume(ctxT(t)); err != nil {
			t.Fatalf("resume after kill %d at %s: %v", i, s.at, err)
		}
		h := balanced(t, a)
		if h.Books.InFlightSats != 0 || h.Books.LostToMintSats != 0 {
			t.Fatalf("after kill %d at %s: %+v", i, s.at, h.Books)
		}
		a.Close()
		st.Close()
	}
	if killed < 14 {
		t.Fatalf("only %d of 20 kills fired", killed)
	}
}
