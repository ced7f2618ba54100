package devmint_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/elnosh/gonuts/wallet"
	decodepay "github.com/nbd-wtf/ln-decodepay"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

func newWallet(t *testing.T, m *devmint.Mint) *wallet.Wallet { return minttest.Wallet(t, m.URL) }

func TestMintServesOnLoopbackWithRealInfo(t *testing.T) {
	t.Parallel()
	m := minttest.Start(t, devmint.Options{Name: "Loopback Mint", Description: "for tests"})
	if !strings.HasPrefix(m.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on 127.0.0.1", m.URL)
	}
	resp, err := http.Get(m.URL + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Name, Pubkey, Version string
		URLs                  []string `json:"urls"`
	}
	json.NewDecoder(resp.Body).Decode(&info)
	if info.Name != "Loopback Mint" || len(info.Pubkey) != 66 || !strings.HasPrefix(info.Version, "gonuts/") || info.URLs[0] != m.URL {
		t.Fatalf("info = %+v", info)
	}
}

func TestInvoicesStartUnpaid(t *testing.T) {
	t.Parallel()
	m := minttest.Start(t, devmint.Options{})
	w := newWallet(t, m)
	q, err := w.RequestMint(100, m.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.MintTokens(q.Quote); err == nil {
		t.Fatal("minted against an unpaid invoice")
	}
	if err := minttest.Fund(m, w, 100); err != nil {
		t.Fatal(err)
	}
	if w.GetBalance() != 100 {
		t.Fatalf("balance %d, want 100", w.GetBalance())
	}
}

func TestTokensAndMeltsAcrossMints(t *testing.T) {
	t.Parallel()
	a, b := minttest.Start(t, devmint.Options{}), minttest.Start(t, devmint.Options{})
	alice, bob := newWallet(t, a), newWallet(t, b)
	if err := minttest.Fund(a, alice, 500); err != nil {
		t.Fatal(err)
	}

	// A token from alice, received by a second wallet at mint a.
	proofs, err := alice.Send(50, a.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := cashu.NewTokenV4(proofs, a.URL, cashu.Sat, false)
	carol := newWallet(t, a)
	if n, err := carol.Receive(tok, false); err != nil || n != 50 {
		t.Fatalf("receive: %d, %v", n, err)
	}

	// alice pays bob's mint quote at mint b by melting at mint a.
	q, err := bob.RequestMint(30, b.URL)
	if err != nil {
		t.Fatal(err)
	}
	mq, err := alice.RequestMeltQuote(q.Request, a.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := alice.Melt(mq.Quote)
	if err != nil || res.State.String() != "PAID" || res.Preimage == "" {
		t.Fatalf("melt = %+v, %v", res, err)
	}
	if n, err := bob.MintTokens(q.Quote); err != nil || n != 30 {
		t.Fatalf("bob minted %d, %v", n, err)
	}
}

func TestOutcomeAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := minttest.Start(t, devmint.Options{Dir: dir})
	w := newWallet(t, m)
	if err := minttest.Fund(m, w, 100); err != nil {
		t.Fatal(err)
	}
	m.Node.SetOutcome(func(string) lightning.State { return lightning.Failed })
	other := minttest.Start(t, devmint.Options{})
	q, _ := newWallet(t, other).RequestMint(10, other.URL)
	mq, err := w.RequestMeltQuote(q.Request, m.URL)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Melt(mq.Quote); err == nil && res.State.String() == "PAID" {
		t.Fatal("a payment forced to fail was paid")
	}
	url := m.URL
	m.Close()

	// Same dir: same URL, same keys, and the ecash minted before still spends.
	m2, err := devmint.Start(devmint.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m2.URL != url {
		t.Fatalf("restarted at %s, want %s", m2.URL, url)
	}
	proofs, err := w.Send(40, url, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := cashu.NewTokenV4(proofs, url, cashu.Sat, false)
	w2, _ := wallet.LoadWallet(wallet.Config{WalletPath: filepath.Join(t.TempDir(), "w2"), CurrentMintURL: url})
	defer w2.Shutdown()
	if n, err := w2.Receive(tok, false); err != nil || n != 40 {
		t.Fatalf("after restart: received %d, %v", n, err)
	}
}

func TestKeptPortTakenIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := minttest.Start(t, devmint.Options{Dir: dir})
	// The first mint still holds the port kept in dir.
	if _, err := devmint.Start(devmint.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Fatalf("a second mint on the same dir: %v", err)
	}
	m.Close()
}

// A mint quote (a deposit invoice) expires an hour from now, as its invoice
// does. The node used to give gonuts an absolute time where it expects
// seconds from now: quotes expired in the year 2083.
func TestMintQuoteExpiresInAnHour(t *testing.T) {
	t.Parallel()
	m := minttest.Start(t, devmint.Options{})
	resp, err := http.Post(m.URL+"/v1/mint/quote/bolt11", "application/json", strings.NewReader(`{"amount":100,"unit":"sat"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var q struct {
		Request string `json:"request"`
		Expiry  int64  `json:"expiry"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&q); err != nil || resp.StatusCode != 200 {
		t.Fatalf("mint quote: %d %v", resp.StatusCode, err)
	}
	if left := time.Until(time.Unix(q.Expiry, 0)); left < 59*time.Minute || left > time.Hour {
		t.Errorf("the quote expires at %v, in %v; want in an hour", time.Unix(q.Expiry, 0).UTC(), left)
	}
	inv, err := decodepay.Decodepay(q.Request)
	if err != nil {
		t.Fatal(err)
	}
	if d := q.Expiry - int64(inv.CreatedAt+inv.Expiry); d < -2 || d > 2 {
		t.Errorf("the quote expires at %d, its invoice at %d", q.Expiry, inv.CreatedAt+inv.Expiry)
	}
}
