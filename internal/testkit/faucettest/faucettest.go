// Package faucettest builds what a faucet under test stands on, as outpost
// wires it: on a store of its own (storetest), a treasury (the faucet's
// Cashu wallet) at a mint. The test builds the faucet itself on them:
// faucet's own tests do so from inside the package, which a harness
// importing faucet could not serve.
package faucettest

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

// Treasury opens the faucet's wallet at mintURL on st, waiting for the mint
// at most timeout a request. Its Watch probes the mint every 200 ms (not
// 2 s), so that a test waiting for health to follow an outage waits for
// little more than the outage. The caller closes it: a test that restarts
// the faucet closes one before it opens the next on the same store.
func Treasury(t testing.TB, st *store.Store, mintURL string, log *slog.Logger, timeout time.Duration) *treasury.Treasury {
	t.Helper()
	tr, err := treasury.New(treasury.Config{DB: st.DB, MintURL: mintURL, Log: logger(log), Timeout: timeout, ProbeEvery: 200 * time.Millisecond})
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
