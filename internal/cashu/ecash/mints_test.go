package ecash_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

// TestUnreachableMint: nothing listening, or a mint that never answers:
// every request ends at the wallet's timeout with an "unreachable" error.
func TestUnreachableMint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln := httptest.NewServer(http.NotFoundHandler())
	down := ln.URL
	ln.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	for _, url := range []string{down, slow.URL} {
		e := open(t, url, "", func(c *ecash.Config) { c.Timeout = 300 * time.Millisecond })
		err := e.w.Refresh(ctx)
		if ecash.ProblemOf(err) != ecash.Unreachable {
			t.Fatalf("%s: %v, want unreachable", url, err)
		}
		if _, err := e.w.Send(ctx, "", 1, 0); ecash.ProblemOf(err) != ecash.Unreachable {
			t.Fatalf("send: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatal("the test's own deadline ran out: the wallet's timeout did not hold")
		}
	}
}

// TestIncompatibleMint: a keyset whose keys do not derive its id, a site
// that is no mint, an answer that is not JSON: "incompatible", with what
// was wrong.
func TestIncompatibleMint(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	keys := map[string]string{"1": "03a40f20667ed53513075dc51e715ff2046cad64eb68960632269ba7f0210e38bc",
		"2": "03fd4ce5a16b65576145949e6f99f445f8249fee17c606b688b504a849cdc452de"}
	forged := "01" + strings.Repeat("ab", 32)
	mux := http.NewServeMux()
	mux.HandleFunc("/forged/v1/info", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"name":"forger","nuts":{"12":{"supported":true}}}`))
	})
	mux.HandleFunc("/nodleq/v1/info", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"name":"no dleq","nuts":{}}`)) })
	mux.HandleFunc("/forged/v1/keysets", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keysets": []any{map[string]any{"id": forged, "unit": "sat", "active": true, "input_fee_ppk": 0}}})
	})
	mux.HandleFunc("/forged/v1/keys/"+forged, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keysets": []any{map[string]any{"id": forged, "unit": "sat", "keys": keys}}})
	})
	mux.HandleFunc("/html/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>a blog</html>")) })
	mux.HandleFunc("/busy/v1/info", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		w.Write([]byte(`{"detail":"failed to acquire database lock","code":0}`))
	})
	mux.HandleFunc("/garbled/v1/info", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		w.Write([]byte(`bad request`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]string{"/forged": "derive", "/html": "JSON", "/nothing": "404", "/garbled": "bad request", "/nodleq": "NUT-12"} {
		e := open(t, srv.URL+path, "")
		err := e.w.Refresh(ctx)
		me := ecash.AsMintError(err)
		if me == nil || me.Problem != ecash.Incompatible || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want incompatible (%s)", path, err, want)
		}
	}
	// A mint without NUT-12 is used only when the operator allows it.
	e := open(t, srv.URL+"/nodleq", "", func(c *ecash.Config) { c.AllowNoDLEQ = true })
	if err := e.w.Refresh(ctx); err == nil || strings.Contains(err.Error(), "NUT-12") {
		t.Errorf("nodleq allowed: %v, want past the NUT-12 check", err)
	}
	// An error in NUT-00's form, though with code 0, is the mint's answer.
	e = open(t, srv.URL+"/busy", "")
	if err := e.w.Refresh(ctx); ecash.ProblemOf(err) != ecash.Refused || !strings.Contains(err.Error(), "database lock") {
		t.Errorf("busy: %v, want refused", err)
	}
}

// tamper changes the DLEQ proofs in the mint's answers on the given paths.
type tamper struct {
	next  http.RoundTripper
	paths map[string]bool
}

func (tp *tamper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := tp.next.RoundTrip(r)
	if err != nil || !tp.paths[r.URL.Path] {
		return resp, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Flip the last hex digit of every "s" of a DLEQ proof.
	var v any
	if json.Unmarshal(b, &v) == nil {
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case map[string]any:
				if d, ok := x["dleq"].(map[string]any); ok {
					if s, ok := d["s"].(string); ok && s != "" {
						d["s"] = s[:len(s)-1] + map[bool]string{true: "1", false: "0"}[s[len(s)-1] == '0']
					}
				}
				for _, y := range x {
					walk(y)
				}
			case []any:
				for _, y := range x {
					walk(y)
				}
			}
		}
		walk(v)
		b, _ = json.Marshal(v)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// TestBadSignatures: signatures whose DLEQ proofs (NUT-12) fail are never
// kept or handed out. Asked again through NUT-09 restore, those the mint
// signs properly are kept and the send goes through; when restore fails
// them too, no token is made, the change is kept, only the token's
// outputs are booked lost to the mint. Once the mint's signatures check
// out again, Recover restores those too, and sends work.
func TestBadSignatures(t *testing.T) {
	t.Parallel()
	for _, m := range mints(t) {
		t.Run(m.name, func(t *testing.T) {
			ctx := ctxT(t)
			tp := &tamper{next: http.DefaultTransport, paths: map[string]bool{}}
			e := open(t, m.url, "", func(c *ecash.Config) { c.HTTP = &http.Client{Transport: tp} })
			fund(t, m, e.w, 200)
			var out uint64 // booked by the caller: tokens and their fees

			tp.paths["/v1/swap"] = true
			s, err := e.w.Send(ctx, "", 10, 0)
			if err != nil {
				t.Fatalf("send with forged swap signatures but an honest restore: %v", err)
			}
			out += s.Amount + s.Fee
			redeem(t, m, s.Proofs, s.Amount)
			books(t, e.w, 200, out)

			tp.paths["/v1/restore"] = true
			before := e.w.Balance()
			s, err = e.w.Send(ctx, "", 10, 0)
			if ecash.ProblemOf(err) != ecash.Faulty || !strings.Contains(err.Error(), "did not verify") || len(s.Proofs) != 0 {
				t.Fatalf("send with forged signatures everywhere: %+v %v", s, err)
			}
			_, tot, _ := e.w.Books()
			if tot.LostSats == 0 || tot.LostSats > 16 || before-e.w.Balance() != tot.LostSats+s.Fee {
				t.Fatalf("lost %d, fee %d, balance %d → %d: more than the token's outputs went", tot.LostSats, s.Fee, before, e.w.Balance())
			}
			out += s.Fee
			books(t, e.w, 200, out)

			// Once the mint's signatures verify again, what was booked lost
			// is restored (NUT-09): the mint had signed it.
			tp.paths = map[string]bool{}
			if _, err := e.w.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			if _, tot, _ := e.w.Books(); tot.LostSats != 0 {
				t.Fatalf("still lost after the mint behaves: %+v", tot)
			}
			books(t, e.w, 200, out)
			s, err = e.w.Send(ctx, "", 10, 0)
			if err != nil {
				t.Fatalf("send once the mint behaves: %v", err)
			}
			out += s.Amount + s.Fee
			redeem(t, m, s.Proofs, s.Amount)
			books(t, e.w, 200, out)
			audit(t, e.w)
		})
	}
}

// redeem has another wallet receive proofs and checks it nets amount.
func redeem(t *testing.T, m mintUnderTest, proofs cashu.Proofs, amount uint64) {
	t.Helper()
	user := open(t, m.url, "")
	got, _, err := user.w.Receive(ctxT(t), "", proofs)
	if err != nil || got != amount {
		t.Fatalf("the receiver got %d (%v), want %d", got, err, amount)
	}
}

// books checks the wallet's ledger: what came in (plus what the mint gave
// beyond it) is what it holds, what its callers booked (out: paid and
// fees) and what it booked itself (lost, housekeeping fees).
func books(t *testing.T, w *ecash.Wallet, in, out uint64) {
	t.Helper()
	h, tot, err := w.Books()
	if err != nil {
		t.Fatal(err)
	}
	if in+tot.SurplusSats != h.Unspent+h.Reserved+h.Quarantined+out+tot.LostSats+tot.InternalFeeSats {
		t.Fatalf("the books do not balance: in %d + surplus %d != held %+v + out %d + %+v", in, tot.SurplusSats, h, out, tot)
	}
}

// TestExactMeltWithoutFeeReturn: a mint without NUT-08 keeps whatever is
// paid beyond amount + fee reserve, so the wallet melts exact proofs.
func TestExactMeltWithoutFeeReturn(t *testing.T) {
	t.Parallel()
	node, err := devmint.NewNode("")
	if err != nil {
		t.Fatal(err)
	}
	node.FeeReserveFn = func(uint64) uint64 { return 3 }
	m := minttest.Start(t, devmint.Options{Node: node, InputFeePpk: 100})
	defer node.Close()
	mut := mintUnderTest{"gonuts with fee reserve", m.URL, func(t testing.TB, inv string) {
		if err := node.PayInvoice(inv); err != nil {
			t.Fatal(err)
		}
	}}
	ctx := ctxT(t)
	e := open(t, m.URL, "")
	fund(t, mut, e.w, 1000)
	user := open(t, gonutsMint.URL, "")
	q, err := user.w.RequestMint(ctx, 37)
	if err != nil {
		t.Fatal(err)
	}
	mq, err := e.w.MeltQuote(ctx, q.Request)
	if err != nil || mq.FeeReserve != 3 {
		t.Fatalf("quote %+v %v", mq, err)
	}
	p, err := e.w.Melt(ctx, mq, 0)
	if err != nil || p.State != ecash.Paid {
		t.Fatalf("melt %+v %v", p, err)
	}
	// 37 + 3 reserve + one input fee for the exact proofs + the split's fee.
	if spent := 1000 - e.w.Balance(); spent != 37+p.Fee || p.Fee > 3+2 {
		t.Fatalf("spent %d, fee %d", spent, p.Fee)
	}
	audit(t, e.w)
	if st, err := user.w.CompleteMint(ctx, q.Quote); err != nil || st != ecash.MintIssued {
		t.Fatalf("the invoice was not paid: %s %v", st, err)
	}
}
