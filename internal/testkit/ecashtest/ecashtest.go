// Package ecashtest gives tests a Cashu user: a wallet (package ecash) on a
// store of its own that makes the invoices a faucet pays, collects them,
// and takes and makes tokens.
package ecashtest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
)

// Payee is a user's wallet at one mint.
type Payee struct {
	t    testing.TB
	W    *ecash.Wallet
	Mint string
}

// NewPayee opens a wallet at mint on a temp store.
func NewPayee(t testing.TB, mint string) *Payee {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(t, storetest.Options{Log: log})
	w, err := ecash.Open(ecash.Config{DB: st.DB, MintURL: mint, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return &Payee{t: t, W: w, Mint: mint}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Invoice asks the mint for an invoice of sats (a mint quote).
func (p *Payee) Invoice(sats int64) (bolt11, quote string) {
	p.t.Helper()
	q, err := p.W.RequestMint(ctx(p.t), uint64(sats))
	if err != nil {
		p.t.Fatal(err)
	}
	return q.Request, q.Quote
}

// Collect mints a quote whose invoice was paid, waiting up to 20 s for the
// payment (the proof that it arrived), and returns the balance.
func (p *Payee) Collect(quote string) uint64 {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := p.W.CompleteMint(ctx(p.t), quote)
		if st == ecash.MintIssued {
			return p.W.Balance()
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("quote %s was not paid: %s %v", quote, st, err)
		}
		time.Sleep(100 * time.Millisecond) // a poll: the mint learns of the payment in its own time
	}
}

// Receive swaps a token into the wallet and returns what it got.
func (p *Payee) Receive(token string) uint64 {
	p.t.Helper()
	got, err := p.TryReceive(token)
	if err != nil {
		p.t.Fatalf("receiving %.10s…: %v", token, err)
	}
	return got
}

// TryReceive is Receive returning the error.
func (p *Payee) TryReceive(token string) (uint64, error) {
	tok, err := ecash.DecodeToken(token)
	if err != nil {
		return 0, err
	}
	got, _, err := p.W.Receive(ctx(p.t), "", tok.Proofs)
	return got, err
}

// Token takes sats (plus the receiver's input fee) out as a cashuA (v3) or
// cashuB token.
func (p *Payee) Token(sats int64, v3 bool) string {
	p.t.Helper()
	s, err := p.W.Send(ctx(p.t), "", uint64(sats), 0)
	if err != nil {
		p.t.Fatal(err)
	}
	tok, err := ecash.Token{Mint: p.Mint, Proofs: s.Proofs}.Encode(v3)
	if err != nil {
		p.t.Fatal(err)
	}
	return tok
}
