package mintdir

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/store"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type env struct {
	t     testing.TB
	dir   *Directory
	st    *store.Store
	clock *testkit.Clock
	ctx   context.Context
}

func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	st, err := store.Open(t.TempDir(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnvOn(t, st, cfg)
}

func newEnvOn(t testing.TB, st *store.Store, cfg Config) *env {
	c := testkit.NewClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	cfg.DB, cfg.Events, cfg.Log, cfg.Now = st.DB, st.Events, quiet(), c.Now
	cfg.AllowPrivate = true
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, dir: New(cfg), st: st, clock: c, ctx: ctx}
}

func (e *env) submit(u string) string {
	e.t.Helper()
	res, err := e.dir.Submit(e.ctx, u)
	if err != nil {
		e.t.Fatalf("submit %s: %v", u, err)
	}
	return res.ID.String()
}

func (e *env) probe(id string) *Mint {
	e.t.Helper()
	if err := e.dir.Probe(e.ctx, id); err != nil {
		e.t.Fatalf("probe: %v", err)
	}
	return e.mint(id)
}

func (e *env) mint(id string) *Mint {
	e.t.Helper()
	m, err := e.dir.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return m
}

// fakeMint is an httptest server that answers like a Cashu mint, or
// misbehaves as told.
type fakeMint struct {
	srv *httptest.Server
	URL string

	mu       sync.Mutex
	info     map[string]any
	behavior func(w http.ResponseWriter, r *http.Request) bool // true: handled
	hits     int
}

func newFakeMint(t testing.TB, name, pubkey string) *fakeMint {
	f := &fakeMint{info: map[string]any{
		"name": name, "pubkey": pubkey, "version": "fake/1.0", "description": "a fake mint",
		"contact": []any{map[string]any{"method": "email", "info": "op@example.com"}},
		"time":    1700000000,
		"nuts": map[string]any{
			"4":  map[string]any{"methods": []any{map[string]any{"method": "bolt11", "unit": "sat", "min_amount": 1, "max_amount": 100000}}, "disabled": false},
			"5":  map[string]any{"methods": []any{map[string]any{"method": "bolt11", "unit": "sat"}}, "disabled": false},
			"7":  map[string]any{"supported": true},
			"8":  map[string]any{"supported": false},
			"17": map[string]any{"supported": []any{map[string]any{"method": "bolt11", "unit": "sat", "commands": []any{"bolt11_mint_quote"}}}},
		},
	}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMint) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits++
	b := f.behavior
	info, _ := json.Marshal(f.info)
	f.mu.Unlock()
	if b != nil && b(w, r) {
		return
	}
	switch r.URL.Path {
	case "/v1/info":
		w.Header().Set("Content-Type", "application/json")
		w.Write(info)
	case "/v1/keysets":
		fmt.Fprint(w, `{"keysets":[{"id":"009a1f293253e41e","unit":"sat","active":true,"input_fee_ppk":100}]}`)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeMint) set(k string, v any) { f.mu.Lock(); f.info[k] = v; f.mu.Unlock() }

func (f *fakeMint) misbehave(b func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	f.behavior = b
	f.mu.Unlock()
}

func fail(status int) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool { http.Error(w, "down", status); return true }
}

const pk1 = "02a9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba2"
const pk2 = "03b9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba3"
