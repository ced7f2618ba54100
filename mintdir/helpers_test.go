package mintdir

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
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
	return newEnvOn(t, storetest.Open(t, storetest.Options{}), cfg)
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

func newFakeMint(t testing.TB, name, pubkey string) *mintdirtest.FakeMint {
	return mintdirtest.NewFakeMint(t, map[string]any{"name": name, "pubkey": pubkey})
}

const pk1 = "02a9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba2"
const pk2 = "03b9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba3"
