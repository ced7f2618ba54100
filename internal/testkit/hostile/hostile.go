// Package hostile is a reverse proxy for tests that puts a misbehaving
// network and a lying mint between a Cashu wallet and a real mint (the
// embedded gonuts mint of package devmint, or Nutshell through
// testkit/nutshelltest). Rules pick a Fault per route and per request, so a
// test can show that the wallet checks everything a mint answers: it must
// survive answers that never come, come cut off, or come with signatures
// that are not what they claim to be.
//
//	m, _ := devmint.Start(devmint.Options{Dir: t.TempDir()})
//	p := hostile.New(t, m.URL) // give the wallet p.URL as its mint
//	p.Add(hostile.Rule{Route: "/v1/swap", Fault: hostile.CorruptSig, Times: 1, Indices: []int{-1}})
//	... the wallet swaps: it must reject the last signature ...
//	if p.Applied("/v1/swap") != 1 { t.Fatal("the fault never hit") }
//
// If the mint cannot be reached (stopped, restarting), the proxy answers 502
// to what it would forward, and the rule is not used up.
//
// What the two mints do about DLEQ proofs (NUT-12), which decides what a
// wallet may demand of a mint:
//
//   - gonuts v0.4.2 (devmint) advertises "12": {"supported": true} in
//     /v1/info and puts a "dleq" {"e","s"} in every signature it makes: swap,
//     mint and restore (restore answers the DLEQ it stored with the
//     signature). It does not support NUT-08 ("8": {"supported": false}), so
//     a melt answers no change at all.
//   - Nutshell 0.20.3 advertises "12": {"supported": true} and puts a "dleq"
//     in every signature: swap, mint and melt change straight from signing;
//     restore and the change in GET /v1/melt/quote/bolt11/{id} recompute it
//     (it no longer stores DLEQs, migration m038). It supports NUT-08.
//
// So against either mint a signature without a DLEQ, or with one that does
// not verify, is the proxy's doing (DropDLEQ, CorruptSig), never the mint's.
//
// Faults that change signatures act on the arrays "signatures" (swap, mint,
// restore), "change" (melt) and "promises" (older restore answers) of a 200
// answer. An answer with none of them (an error, another route) passes
// unchanged and does not use up the rule, so a rule on "/v1/*" hits the
// first answer that has signatures.
//
// Keyset rotation: see RestartNutshell for Nutshell. The gonuts mint retires
// every other keyset by itself when it starts with another
// devmint.Options.KeysetIndex (mint.Config.DerivationPathIdx); a Call rule
// can restart it so in the middle of a client's flow. WrongKeyset with
// Rule.KeysetID stands in for a signature under the wrong keyset.
package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what the proxy does to one request.
type Fault int

const (
	Pass             Fault = iota
	FailBefore             // answer HTTP 500 without forwarding (the mint never saw it)
	FailAfter              // forward; the mint acts; answer HTTP 500 instead of its answer
	Truncate               // forward; answer the first half of the mint's body, status 200
	DropDLEQ               // forward; remove "dleq" from every selected signature
	CorruptSig             // forward; replace the selected signatures' C_ with another valid curve point (keeping their dleq, which then fails)
	CorruptSigNoDLEQ       // forward; corrupt C_ and remove dleq
	WrongKeyset            // forward; replace the selected signatures' "id" with another keyset id
	Stall                  // hold the request without forwarding until the client gives up (its context) or the proxy goes down
	Refuse                 // answer HTTP 400 {"detail": Rule.Detail, "code": Rule.Code} without forwarding
	ChangeState            // forward; the mint acts; answer its 200 answer with "state" set to Rule.State (a melt said UNPAID or PENDING that the mint took)
	DropSigs               // forward; remove the selected signatures from the answer (a mint that signs less than it owes: a melt's change short)
	Call                   // run Rule.Call, then forward: the test acts between a request and the mint's answer (e.g. rotates the mint's keyset)
	Late                   // hold the request until the client gives up, then forward it anyway once Rule.Release is closed: the mint acts after the client's deadline
)

var faultNames = [...]string{"Pass", "FailBefore", "FailAfter", "Truncate", "DropDLEQ", "CorruptSig",
	"CorruptSigNoDLEQ", "WrongKeyset", "Stall", "Refuse", "ChangeState", "DropSigs", "Call", "Late"}

func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "Fault(?)"
}

// changesSignatures reports whether f edits the signatures of an answer.
func (f Fault) changesSignatures() bool {
	return f == DropDLEQ || f == CorruptSig || f == CorruptSigNoDLEQ || f == WrongKeyset || f == DropSigs
}

// Rule applies Fault to requests of Route (an exact path like "/v1/swap", or
// a prefix ending in "*", like "/v1/keys/*" or "*").
type Rule struct {
	Route   string
	Fault   Fault
	Times   int    // how many matching requests it applies to; 0 = until cleared
	Skip    int    // let this many matching requests pass (unharmed, no later rule tried) first
	Indices []int  // which signatures, by position in the array; negative counts from the end (-1 is the last); nil = all
	Code    int    // for Refuse
	Detail  string // for Refuse; "" = "hostile: refused"
	// KeysetID is the id WrongKeyset puts in; "" = another keyset the mint
	// lists in /v1/keysets, or, if it has no other, a made-up id.
	KeysetID string
	// State is the "state" ChangeState puts in an answer, e.g. "UNPAID".
	State string
	// Call is what Call runs before it forwards; it may point the proxy
	// at another mint (SetUpstream).
	Call func()
	// Release is when Late forwards the request it held (after its
	// client gave up); nil: as soon as the client gave up.
	Release <-chan struct{}
}

// matches reports whether route (a Rule.Route pattern) covers path.
func matches(route, path string) bool {
	if prefix, ok := strings.CutSuffix(route, "*"); ok {
		return strings.HasPrefix(path, prefix)
	}
	return route == path
}

type rule struct {
	Rule
	skipped, used int
}

// Proxy is a hostile proxy on 127.0.0.1. Its methods are safe for
// concurrent use.
type Proxy struct {
	URL string // http://127.0.0.1:port, the same across Down and Up

	t      testing.TB
	addr   string
	client *http.Client

	mu       sync.Mutex
	upstream string
	rules    []*rule
	seen     map[string]int // requests by path
	applied  map[string]int // faults applied by path
	srv      *http.Server   // nil while down
	stop     chan struct{}  // closed by Down: ends the stalls and forwards under way
	inflight int
	closed   bool
}

// New starts a proxy to upstream (a mint's base URL) on a free port of
// 127.0.0.1; it is closed when t ends.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // only ever 127.0.0.1; no proxy from the environment
	p := &Proxy{
		URL:      "http://" + ln.Addr().String(),
		t:        t,
		addr:     ln.Addr().String(),
		client:   &http.Client{Transport: tr},
		upstream: strings.TrimSuffix(upstream, "/"),
		seen:     map[string]int{},
		applied:  map[string]int{},
	}
	p.serve(ln)
	t.Cleanup(p.close)
	return p
}

// serve must be called with p.mu held, or before p is shared.
func (p *Proxy) serve(ln net.Listener) {
	p.stop = make(chan struct{})
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
}

// Add appends a rule. Rules are checked in order; the first matching rule
// with uses left applies.
func (p *Proxy) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &rule{Rule: r})
}

// Clear removes every rule; requests pass from now on. Counts are kept.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// SetUpstream points the proxy at another mint URL, e.g. a mint restarted
// elsewhere; the proxy's own URL stays, as a wallet knows a mint by its URL.
func (p *Proxy) SetUpstream(url string) {
	p.mu.Lock()
	p.upstream = strings.TrimSuffix(url, "/")
	p.mu.Unlock()
	p.client.CloseIdleConnections()
}

// Down closes the listener and every connection: new connections are
// refused, as in a mint outage, and requests under way are cut (the
// forwards among them are cancelled, so the mint may or may not have acted).
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down()
}

func (p *Proxy) down() {
	if p.srv == nil {
		return
	}
	p.srv.Close()
	close(p.stop)
	p.srv = nil
}

// Up listens again on the same port. If another process took the port
// meanwhile, the test fails (Errorf) and the proxy stays down.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil || p.closed {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Errorf("hostile: listen again on %s: %v", p.addr, err)
		return
	}
	p.serve(ln)
}

// close takes the proxy down for good and waits (a while) for its handlers
// to return, so none outlives the test.
func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.down()
	p.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		n := p.inflight
		p.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond) // a poll: requests in flight end in their own time
	}
	p.client.CloseIdleConnections()
}

// Count is the number of requests the proxy has received for route (an exact
// path or a prefix ending in "*").
func (p *Proxy) Count(route string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return sum(p.seen, route)
}

// Applied is the number of faults (other than Pass) applied on route (an
// exact path or a prefix ending in "*").
func (p *Proxy) Applied(route string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return sum(p.applied, route)
}

func sum(m map[string]int, route string) int {
	n := 0
	for path, c := range m {
		if matches(route, path) {
			n += c
		}
	}
	return n
}

// pick counts the request and reserves a use of the rule that applies to
// it (nil: none).
func (p *Proxy) pick(path string) (r *rule, upstream string, stop chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[path]++
	p.inflight++
	for _, r := range p.rules {
		if !matches(r.Route, path) || (r.Times > 0 && r.used >= r.Times) {
			continue
		}
		if r.skipped < r.Skip {
			r.skipped++
			break
		}
		r.used++
		return r, p.upstream, p.stop
	}
	return nil, p.upstream, p.stop
}

// settle ends a request: it counts the fault if it was applied, and gives
// the use back if not.
func (p *Proxy) settle(r *rule, path string, applied bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight--
	switch {
	case r == nil || r.Fault == Pass:
	case applied:
		p.applied[path]++
	default:
		r.used--
	}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	r, upstream, stop := p.pick(path)
	applied := true
	defer func() { p.settle(r, path, applied) }()
	fault := Pass
	if r != nil {
		fault = r.Fault
	}
	switch fault {
	case FailBefore:
		http.Error(w, "hostile: FailBefore", http.StatusInternalServerError)
	case Refuse:
		refuse(w, r.Rule)
	case Call:
		r.Call()
		p.mu.Lock()
		upstream = p.upstream
		p.mu.Unlock()
		p.forward(w, req, upstream, stop, nil)
	case Stall:
		// net/http notices a client that gave up (and cancels the request's
		// context) only once the body has been read.
		io.Copy(io.Discard, io.LimitReader(req.Body, maxBody))
		select {
		case <-req.Context().Done():
		case <-stop:
		}
	case Late:
		p.late(req, upstream, stop, r.Release)
	default:
		applied = p.forward(w, req, upstream, stop, r)
	}
}

// late holds req until its client gives up, then, once release is closed,
// sends it to the mint anyway and drops the mint's answer: a request that
// reaches a busy mint after the client's deadline and is carried out. It
// returns once the mint answered (or the proxy went down).
func (p *Proxy) late(req *http.Request, upstream string, stop chan struct{}, release <-chan struct{}) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
	if err != nil {
		return
	}
	select {
	case <-req.Context().Done():
	case <-stop:
		return
	}
	select {
	case <-release:
	case <-stop:
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	out := req.Clone(ctx)
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	p.roundTrip(ctx, out, upstream)
}

func refuse(w http.ResponseWriter, r Rule) {
	detail := r.Detail
	if detail == "" {
		detail = "hostile: refused"
	}
	b, _ := json.Marshal(map[string]any{"detail": detail, "code": r.Code})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}

// maxBody bounds what the proxy reads of an answer; mints answer far less.
const maxBody = 32 << 20

// answer is the mint's answer to a forwarded request.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// forward sends req to the mint and answers the client after applying r's
// fault; it reports whether the fault took effect.
func (p *Proxy) forward(w http.ResponseWriter, req *http.Request, upstream string, stop chan struct{}, r *rule) bool {
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	a, err := p.roundTrip(ctx, req, upstream)
	if err != nil {
		http.Error(w, "hostile: the mint did not answer: "+err.Error(), http.StatusBadGateway)
		return false
	}
	applied := true
	switch {
	case r == nil:
	case r.Fault == FailAfter:
		a = answer{status: http.StatusInternalServerError, body: []byte("hostile: FailAfter\n")}
	case r.Fault == Truncate:
		a.status, a.body = http.StatusOK, a.body[:len(a.body)/2]
	case r.Fault == ChangeState && a.status == http.StatusOK:
		a.body, applied = withState(a.body, r.State)
	case r.Fault.changesSignatures() && a.status == http.StatusOK:
		t := &tamperer{Rule: r.Rule, keysets: func() []string { return p.keysets(ctx, upstream) }}
		a.body, applied = t.tamper(a.body)
	default:
		applied = false
	}
	writeAnswer(w, a)
	return applied
}

// hopHeaders are not passed on by a proxy (RFC 9110 7.6.1), and
// Accept-Encoding is left to our transport, which then decompresses, so
// that the proxy can read and change the JSON.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Accept-Encoding": true, "Content-Length": true,
	"Content-Encoding": true}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if !hopHeaders[http.CanonicalHeaderKey(k)] {
			dst[k] = append([]string(nil), vs...)
		}
	}
}

func (p *Proxy) roundTrip(ctx context.Context, req *http.Request, upstream string) (answer, error) {
	out, err := http.NewRequestWithContext(ctx, req.Method, upstream+req.URL.RequestURI(), req.Body)
	if err != nil {
		return answer{}, err
	}
	out.ContentLength = req.ContentLength
	copyHeader(out.Header, req.Header)
	resp, err := p.client.Do(out)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

func writeAnswer(w http.ResponseWriter, a answer) {
	copyHeader(w.Header(), a.header)
	if a.header == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// keysets lists the ids the mint announces, for WrongKeyset.
func (p *Proxy) keysets(ctx context.Context, upstream string) []string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, upstream+"/v1/keysets", nil)
	if err != nil {
		return nil
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var ks struct {
		Keysets []struct {
			ID string `json:"id"`
		} `json:"keysets"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&ks) != nil {
		return nil
	}
	ids := make([]string, 0, len(ks.Keysets))
	for _, k := range ks.Keysets {
		ids = append(ids, k.ID)
	}
	return ids
}
