package hostile

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

// cannedMint answers /v1/swap with three signatures and /v1/keysets with
// two keysets; every other path gets {}.
func cannedMint(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/swap":
			w.Write([]byte(`{"signatures":[` + cannedSig + `,` + cannedSig + `,` + cannedSig + `]}`))
		case "/v1/keysets":
			w.Write([]byte(`{"keysets":[{"id":"00aa","unit":"sat","active":true},{"id":"00bb","unit":"sat","active":false}]}`))
		case "/v1/melt/bolt11":
			w.Write([]byte(`{"quote":"q","state":"PAID","paid":true}`))
		case "/v1/refused":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"detail":"no","code":11001}`))
		default:
			w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// cannedSig's C_ is the generator point G.
const cannedSig = `{"amount":1,"id":"00aa","C_":"0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798","dleq":{"e":"01","s":"02"}}`

func cannedSwap(t *testing.T, ctx context.Context, p *Proxy) (int, cashu.BlindedSignatures) {
	t.Helper()
	status, b, err := call(ctx, p.URL, http.MethodPost, "/v1/swap", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		return status, nil
	}
	return status, signaturesOf(t, b)
}

func TestRules(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	p := New(t, cannedMint(t).URL)
	// Skip 1, then twice on the last signature; a later rule on a prefix
	// takes over when the first is used up, and answers without
	// signatures do not use it up.
	p.Add(Rule{Route: "/v1/swap", Fault: DropDLEQ, Times: 2, Skip: 1, Indices: []int{-1, 7}})
	p.Add(Rule{Route: "/v1/*", Fault: WrongKeyset, Times: 1})
	for _, path := range []string{"/v1/info", "/v1/refused"} {
		call(ctx, p.URL, http.MethodGet, path, nil)
	}
	var dleqs [][]bool
	var ids [][]string
	for range 4 {
		_, sigs := cannedSwap(t, ctx, p)
		var d []bool
		var id []string
		for _, s := range sigs {
			d, id = append(d, s.DLEQ != nil), append(id, s.Id)
		}
		dleqs, ids = append(dleqs, d), append(ids, id)
	}
	wantD := [][]bool{{true, true, true}, {true, true, false}, {true, true, false}, {true, true, true}}
	wantID := [][]string{{"00aa", "00aa", "00aa"}, {"00aa", "00aa", "00aa"}, {"00aa", "00aa", "00aa"}, {"00bb", "00bb", "00bb"}}
	if !slices.EqualFunc(dleqs, wantD, slices.Equal) || !slices.EqualFunc(ids, wantID, slices.Equal) {
		t.Fatalf("dleq %v ids %v", dleqs, ids)
	}
	if p.Count("/v1/swap") != 4 || p.Count("*") != 6 || p.Applied("/v1/swap") != 3 || p.Applied("/v1/*") != 3 || p.Applied("/v1/info") != 0 {
		t.Fatalf("counts %d %d applied %d %d", p.Count("/v1/swap"), p.Count("*"), p.Applied("/v1/swap"), p.Applied("/v1/*"))
	}
}

// TestMoreRules: an explicit keyset id, a made-up one, Clear, Truncate and
// Refuse.
func TestMoreRules(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	p := New(t, cannedMint(t).URL)
	// A made-up id when the mint has no other; an explicit one wins.
	p.Add(Rule{Route: "/v1/swap", Fault: WrongKeyset, Indices: []int{0}, KeysetID: "00cc"})
	if _, sigs := cannedSwap(t, ctx, p); sigs[0].Id != "00cc" || sigs[1].Id != "00aa" {
		t.Fatalf("ids %+v", sigs)
	}
	tm := &tamperer{Rule: Rule{Fault: WrongKeyset}, keysets: func() []string { return []string{"00aa"} }}
	if got := tm.otherID("00aa"); got != "00ab" && got != "00a0" {
		t.Fatalf("made-up id %s", got)
	}
	p.Clear()
	if status, sigs := cannedSwap(t, ctx, p); status != 200 || sigs[0].Id != "00aa" || sigs[2].DLEQ == nil {
		t.Fatalf("after Clear: %d %+v", status, sigs)
	}
	// Truncate cuts even a short answer in half, with status 200.
	p.Add(Rule{Route: "/v1/info", Fault: Truncate, Times: 1})
	if status, b, _ := call(ctx, p.URL, http.MethodGet, "/v1/info", nil); status != 200 || string(b) != "{" {
		t.Fatalf("truncated: %d %q", status, b)
	}
	// Refuse answers a Cashu error.
	p.Add(Rule{Route: "/v1/swap", Fault: Refuse, Code: 11001, Detail: "Token already spent."})
	status, b, _ := call(ctx, p.URL, http.MethodPost, "/v1/swap", map[string]any{})
	var e struct {
		Detail string `json:"detail"`
		Code   int    `json:"code"`
	}
	if json.Unmarshal(b, &e); status != 400 || e.Code != 11001 || e.Detail != "Token already spent." {
		t.Fatalf("refused: %d %s", status, b)
	}
}

// TestStateSigsCall: ChangeState rewrites a melt answer's state (and its
// older "paid"), DropSigs takes the selected signatures out, and Call runs
// before the request goes on.
func TestStateSigsCall(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 30*time.Second)
	p := New(t, cannedMint(t).URL)
	p.Add(Rule{Route: "/v1/melt/bolt11", Fault: ChangeState, State: "UNPAID", Times: 1})
	var melt struct {
		Quote, State string
		Paid         bool
	}
	if _, b, err := call(ctx, p.URL, http.MethodPost, "/v1/melt/bolt11", map[string]any{}); err != nil || json.Unmarshal(b, &melt) != nil ||
		melt.Quote != "q" || melt.State != "UNPAID" || melt.Paid || p.Applied("/v1/melt/bolt11") != 1 {
		t.Fatalf("melt answer %+v %v", melt, err)
	}
	p.Add(Rule{Route: "/v1/info", Fault: ChangeState, State: "UNPAID", Times: 1})
	if _, b, _ := call(ctx, p.URL, http.MethodGet, "/v1/info", nil); string(b) != "{}" || p.Applied("/v1/info") != 0 {
		t.Fatalf("an answer without a state was changed: %s", b)
	}
	p.Add(Rule{Route: "/v1/swap", Fault: DropSigs, Indices: []int{1}, Times: 1})
	if _, sigs := cannedSwap(t, ctx, p); len(sigs) != 2 {
		t.Fatalf("after DropSigs: %+v", sigs)
	}
	calls := 0
	p.Add(Rule{Route: "/v1/swap", Fault: Call, Call: func() { calls++ }, Times: 1})
	if status, sigs := cannedSwap(t, ctx, p); status != 200 || len(sigs) != 3 || calls != 1 {
		t.Fatalf("after Call: %d %+v, %d calls", status, sigs, calls)
	}
}

func TestSelected(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		idx  []int
		n    int
		want []int
	}{{nil, 3, []int{0, 1, 2}}, {[]int{}, 3, nil}, {[]int{-1, -1, 0, 5, -4}, 3, []int{2, 0}}, {[]int{0}, 0, nil}} {
		if got := selected(c.idx, c.n); !slices.Equal(got, c.want) {
			t.Errorf("selected(%v, %d) = %v, want %v", c.idx, c.n, got, c.want)
		}
	}
}

// gonutsMint starts the embedded test mint and returns it with a proxy in
// front, its keyset, and proofs of 8 sat (enough for one swap per fault).
func gonutsMint(t *testing.T, ctx context.Context) (*devmint.Mint, *Proxy, keyset, cashu.Proofs) {
	m := minttest.Start(t, devmint.Options{})
	k := activeKeyset(t, ctx, m.URL)
	proofs := fund(t, ctx, m.URL, k, m.Node.PayInvoice, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8)
	return m, New(t, m.URL), k, proofs
}

// TestGonutsDLEQ: what the gonuts mint does about NUT-12, as the package
// doc says: advertised, and a DLEQ on every signature (mint: see fund; swap
// and restore here).
func TestGonutsDLEQ(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	m, p, k, proofs := gonutsMint(t, ctx)
	var info struct {
		Nuts map[string]json.RawMessage `json:"nuts"`
	}
	must(t, ctx, p.URL, http.MethodGet, "/v1/info", nil, &info)
	if string(info.Nuts["12"]) != `{"supported":true}` {
		t.Fatalf("nut 12: %s", info.Nuts["12"])
	}
	status, b, out := swap(t, ctx, p.URL, k, proofs[:1], 4, 2, 1, 1)
	if status != 200 {
		t.Fatalf("swap: %d %s", status, b)
	}
	sigs := signaturesOf(t, b)
	restored := restore(t, ctx, m.URL, out)
	for i := range sigs {
		if !out.dleqOK(k, i, sigs[i]) || !out.dleqOK(k, i, restored[i]) {
			t.Fatalf("signature %d: no valid DLEQ: %+v / %+v", i, sigs[i], restored[i])
		}
	}
	out.unblind(t, k, sigs)
}

// faults is the fixture of the fault tests: a gonuts mint, a proxy in front
// of it, and proofs to spend, one per swap.
type faults struct {
	ctx    context.Context
	m      *devmint.Mint
	p      *Proxy
	k      keyset
	proofs cashu.Proofs
}

func TestFaultsGonuts(t *testing.T) {
	t.Parallel()
	f := &faults{ctx: ctxT(t, 2*time.Minute)}
	f.m, f.p, f.k, f.proofs = gonutsMint(t, f.ctx)
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"FailBefore", f.failBefore}, {"FailAfter", f.failAfter}, {"Truncate", f.truncate}, {"DropDLEQ", f.dropDLEQ},
		{"CorruptSig", func(t *testing.T) { f.corrupt(t, CorruptSig, true) }},
		{"CorruptSigNoDLEQ", func(t *testing.T) { f.corrupt(t, CorruptSigNoDLEQ, false) }},
		{"WrongKeyset", f.wrongKeyset}, {"Refuse", f.refuse}, {"Stall", f.stall}, {"Late", f.late}, {"DownUp", f.downUp},
		{"SetUpstream", f.setUpstream},
	} {
		t.Run(c.name, c.run)
	}
}

func (f *faults) next() cashu.Proofs {
	in := f.proofs[:1]
	f.proofs = f.proofs[1:]
	return in
}

// swapWith swaps one proof through the proxy under a rule for that swap.
func (f *faults) swapWith(t *testing.T, r Rule) (cashu.Proofs, int, []byte, blinded) {
	t.Helper()
	f.p.Clear()
	r.Route, r.Times = "/v1/swap", 1
	f.p.Add(r)
	in := f.next()
	before := f.p.Applied("/v1/swap")
	status, b, out := swap(t, f.ctx, f.p.URL, f.k, in, 4, 2, 1, 1)
	if f.p.Applied("/v1/swap") != before+1 {
		t.Fatalf("%v not applied", r.Fault)
	}
	return in, status, b, out
}

// spent asks the mint itself (not the proxy) whether the proof is spent.
func (f *faults) spent(t *testing.T, in cashu.Proofs) bool {
	return states(t, f.ctx, f.m.URL, in)[0] == "SPENT"
}

func (f *faults) failBefore(t *testing.T) {
	in, status, _, _ := f.swapWith(t, Rule{Fault: FailBefore})
	if status != 500 || f.spent(t, in) {
		t.Fatalf("status %d, spent %v", status, f.spent(t, in))
	}
}

func (f *faults) failAfter(t *testing.T) {
	in, status, _, out := f.swapWith(t, Rule{Fault: FailAfter})
	if status != 500 || !f.spent(t, in) {
		t.Fatalf("status %d, spent %v", status, f.spent(t, in))
	}
	// The mint made the swap: its signatures can be restored.
	out.unblind(t, f.k, restore(t, f.ctx, f.p.URL, out))
}

func (f *faults) truncate(t *testing.T) {
	in, status, b, out := f.swapWith(t, Rule{Fault: Truncate})
	full, _ := json.Marshal(map[string]any{"signatures": restore(t, f.ctx, f.m.URL, out)})
	if status != 200 || json.Valid(b) || !f.spent(t, in) || len(b) < len(full)/3 || len(b) > len(full)*2/3 {
		t.Fatalf("status %d, %d of about %d bytes, spent %v: %s", status, len(b), len(full), f.spent(t, in), b)
	}
}

func (f *faults) dropDLEQ(t *testing.T) {
	_, status, b, out := f.swapWith(t, Rule{Fault: DropDLEQ})
	sigs, real := signaturesOf(t, b), restore(t, f.ctx, f.m.URL, out)
	for i := range sigs {
		if status != 200 || sigs[i].DLEQ != nil || sigs[i].C_ != real[i].C_ || !out.dleqOK(f.k, i, real[i]) {
			t.Fatalf("%d: %+v, real %+v", i, sigs[i], real[i])
		}
	}
}

// corrupt: only the last signature is changed, to another point of the
// curve, with its DLEQ kept (and failing) or dropped.
func (f *faults) corrupt(t *testing.T, fault Fault, keepDLEQ bool) {
	_, status, b, out := f.swapWith(t, Rule{Fault: fault, Indices: []int{-1}})
	sigs, real := signaturesOf(t, b), restore(t, f.ctx, f.m.URL, out)
	last := len(sigs) - 1
	for i := range last {
		if sigs[i].C_ != real[i].C_ || sigs[i].Id != real[i].Id || !out.dleqOK(f.k, i, sigs[i]) {
			t.Fatalf("%d changed: %+v", i, sigs[i])
		}
	}
	s := sigs[last]
	point(t, s.C_) // still a point of the curve
	if status != 200 || s.C_ == real[last].C_ || (s.DLEQ != nil) != keepDLEQ || out.dleqOK(f.k, last, s) {
		t.Fatalf("corrupted %+v, real %+v", s, real[last])
	}
}

func (f *faults) wrongKeyset(t *testing.T) {
	_, status, b, _ := f.swapWith(t, Rule{Fault: WrongKeyset})
	for _, s := range signaturesOf(t, b) {
		// gonuts has one keyset, so the id is made up.
		if status != 200 || s.Id == f.k.id || len(s.Id) != len(f.k.id) {
			t.Fatalf("id %s, keyset %s", s.Id, f.k.id)
		}
	}
}

func (f *faults) refuse(t *testing.T) {
	in, status, b, _ := f.swapWith(t, Rule{Fault: Refuse, Code: 11001, Detail: "Token already spent."})
	if status != 400 || !strings.Contains(string(b), `"code":11001`) || f.spent(t, in) {
		t.Fatalf("%d %s, spent %v", status, b, f.spent(t, in))
	}
}

func (f *faults) stall(t *testing.T) {
	p, ctx := f.p, f.ctx
	p.Clear()
	p.Add(Rule{Route: "/v1/swap", Fault: Stall})
	in := f.next()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	req := map[string]any{"inputs": in, "outputs": blind(t, f.k.id, 8).msgs}
	start := time.Now()
	_, _, err := call(short, p.URL, http.MethodPost, "/v1/swap", req)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second || f.spent(t, in) {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	// A stall ends when the proxy goes down, too.
	waitFor(t, ctx, func() bool { return inflight(p) == 0 })
	before := p.Count("/v1/swap")
	done := make(chan error, 1)
	go func() {
		_, _, err := call(ctx, p.URL, http.MethodPost, "/v1/swap", req)
		done <- err
	}()
	waitFor(t, ctx, func() bool { return p.Count("/v1/swap") == before+1 })
	p.Down()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an answer from a stall")
		}
	case <-ctx.Done():
		t.Fatal("the stall outlived Down")
	}
	p.Up()
	p.Clear()
	if status, b, _ := swap(t, ctx, p.URL, f.k, in, 8); status != 200 {
		t.Fatalf("after the stall: %d %s", status, b)
	}
}

// late: the swap is held until its client gives up, then, once released,
// reaches the mint, which carries it out: its input is spent and its
// outputs' signatures can be restored.
func (f *faults) late(t *testing.T) {
	p, ctx := f.p, f.ctx
	p.Clear()
	release := make(chan struct{})
	p.Add(Rule{Route: "/v1/swap", Fault: Late, Times: 1, Release: release})
	in := f.next()
	out := blind(t, f.k.id, 8)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	before := p.Applied("/v1/swap")
	if _, _, err := call(short, p.URL, http.MethodPost, "/v1/swap", map[string]any{"inputs": in, "outputs": out.msgs}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an answer to a late swap: %v", err)
	}
	if f.spent(t, in) {
		t.Fatal("the late swap reached the mint before it was released")
	}
	close(release)
	waitFor(t, ctx, func() bool { return p.Applied("/v1/swap") == before+1 })
	if !f.spent(t, in) {
		t.Fatal("the released swap was not carried out")
	}
	if sigs := restore(t, ctx, f.m.URL, out); len(sigs) != 1 {
		t.Fatalf("%d signatures restored of the late swap's 1", len(sigs))
	}
}

func (f *faults) downUp(t *testing.T) {
	p, ctx := f.p, f.ctx
	p.Clear()
	must(t, ctx, p.URL, http.MethodGet, "/v1/info", nil, nil) // a kept-alive connection, which Down must cut
	p.Down()
	p.Down()
	if _, _, err := call(ctx, p.URL, http.MethodGet, "/v1/info", nil); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("down: %v", err)
	}
	p.Up()
	must(t, ctx, p.URL, http.MethodGet, "/v1/info", nil, nil)
}

func (f *faults) setUpstream(t *testing.T) {
	f.p.SetUpstream("http://127.0.0.1:1") // nobody
	if status, _, err := call(f.ctx, f.p.URL, http.MethodGet, "/v1/info", nil); err != nil || status != http.StatusBadGateway {
		t.Fatalf("%d %v", status, err)
	}
	f.p.SetUpstream(f.m.URL)
	must(t, f.ctx, f.p.URL, http.MethodGet, "/v1/info", nil, nil)
}

func inflight(p *Proxy) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("timed out")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
