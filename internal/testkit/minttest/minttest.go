// Package minttest starts the test mint (package devmint: a gonuts mint on
// a fake Lightning network) for a test, in the test's temporary directory
// unless told where, and closes it when the test ends.
package minttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/elnosh/gonuts/wallet"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
)

// Start starts a mint with o, whose Dir defaults to a temporary one; a
// mint that cannot start fails the test.
func Start(t testing.TB, o devmint.Options) *devmint.Mint {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	m, err := devmint.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// Wallet is a user's gonuts wallet at the mint at mintURL, in a temporary
// directory; it shuts down when the test ends.
func Wallet(t testing.TB, mintURL string) *wallet.Wallet {
	t.Helper()
	w, err := wallet.LoadWallet(wallet.Config{WalletPath: t.TempDir(), CurrentMintURL: mintURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Shutdown() })
	return w
}

// Fund mints amount sats into w at m: a mint quote whose invoice m's fake
// network pays at once.
func Fund(m *devmint.Mint, w *wallet.Wallet, amount uint64) error {
	q, err := w.RequestMint(amount, m.URL)
	if err != nil {
		return fmt.Errorf("mint quote: %w", err)
	}
	if err := m.Node.PayInvoice(q.Request); err != nil {
		return fmt.Errorf("pay the quote: %w", err)
	}
	// The mint learns of the payment through its invoice subscription.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = w.MintTokens(q.Quote)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // a poll: the mint learns of the payment in its own time
	}
}
