// Package faucettest builds what a faucet under test stands on, as outpost
// wires it: a store of its own, and on it a treasury (the faucet's Cashu
// wallet) at a mint. The test builds the faucet itself on them: faucet's
// own tests do so from inside the package, which a harness importing
// faucet could not serve.
package faucettest

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/store"
	"github.com/outpost-relay/outpost/treasury"
)

// Options say where and how the store is opened.
type Options struct {
	Dir   string         // default: a temporary directory
	Store store.Settings // default: store.DefaultSettings()
	Log   *slog.Logger   // default: discarded
}

// Store opens the faucet's store; it is closed when the test ends.
func Store(t testing.TB, o Options) *store.Store {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Store == (store.Settings{}) {
		o.Store = store.DefaultSettings()
	}
	st, err := o.Store.Open(o.Dir, logger(o.Log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Treasury opens the faucet's wallet at mintURL on st, waiting for the mint
// at most timeout a request. The caller closes it: a test that restarts
// the faucet closes one before it opens the next on the same store.
func Treasury(t testing.TB, st *store.Store, mintURL string, log *slog.Logger, timeout time.Duration) *treasury.Treasury {
	t.Helper()
	tr, err := treasury.New(treasury.Config{DB: st.DB, MintURL: mintURL, Log: logger(log), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return l
}
