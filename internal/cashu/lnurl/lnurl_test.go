package lnurl_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/cashu/lnurl"
	"github.com/outpost-relay/outpost/internal/testkit/lnurltest"
	"github.com/outpost-relay/outpost/internal/testkit/netguardtest"
)

func invoice(params *chaincfg.Params, sats int64, descHash []byte) (string, error) {
	var hash [32]byte
	rand.Read(hash[:])
	opt := zpay32.Description("test")
	if descHash != nil {
		var h [32]byte
		copy(h[:], descHash)
		opt = zpay32.DescriptionHash(h)
	}
	inv, err := zpay32.NewInvoice(params, hash, time.Now(), opt, zpay32.Amount(lnwire.MilliSatoshi(sats*1000)))
	if err != nil {
		return "", err
	}
	key, _ := secp256k1.GeneratePrivateKey()
	return inv.Encode(zpay32.MessageSigner{SignCompact: func(msg []byte) ([]byte, error) { return ecdsa.SignCompact(key, msg, true) }})
}

func signet(sats int64) (string, error) { return invoice(&chaincfg.SigNetParams, sats, nil) }

func code(err error) string {
	if e := outpost.AsError(err); e != nil {
		return e.Code
	}
	return ""
}

func TestParseAddress(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"alice@example.com":               "alice@example.com",
		" Bob.Smith+tip@Pay.Example.org ": "bob.smith+tip@pay.example.org",
		"x_y-z@127.0.0.1:8080":            "x_y-z@127.0.0.1:8080",
	}
	for in, want := range good {
		a, err := lnurl.ParseAddress(in)
		if err != nil || a.String() != want {
			t.Errorf("ParseAddress(%q) = %v, %v; want %s", in, a, err, want)
		}
	}
	for _, in := range []string{"", "alice", "@example.com", "alice@", "al ice@example.com", "alice@exa mple.com",
		"alice@example.com/path", "alice@a@b", "alice@example.com:99999", "alice@example.com?x", "alice@[::1",
		strings.Repeat("a", 65) + "@example.com", "lnurl1dp68gurn8ghj7"} {
		if _, err := lnurl.ParseAddress(in); code(err) != "invalid_lightning_address" {
			t.Errorf("ParseAddress(%q) = %v, want invalid_lightning_address", in, err)
		}
	}
}

// loopbackClient's timeout is generous: a loaded CI machine running -race
// must not turn a working server into "did not answer in time".
func loopbackClient() *lnurl.Client {
	return lnurl.New(lnurl.Options{AllowHTTP: true, AllowPrivate: true, Timeout: 10 * time.Second})
}

func TestResolveAndInvoice(t *testing.T) {
	t.Parallel()
	srv := lnurltest.New(t)
	addr, _ := lnurl.ParseAddress(srv.Add("alice", signet))
	c := loopbackClient()
	ctx := context.Background()
	p, err := c.Resolve(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := c.Invoice(ctx, addr, p, 42, bolt11.Signet, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if inv.AmountMsat != 42000 || srv.Invoices("alice") != 1 {
		t.Fatalf("invoice %+v after %d calls", inv, srv.Invoices("alice"))
	}
	if _, err := c.Invoice(ctx, addr, p, 2_000_000, bolt11.Signet, time.Now()); code(err) != "amount_not_accepted" {
		t.Fatalf("over maxSendable: %v", err)
	}
	// An invoice for the wrong network, or amount, is the server's fault.
	if _, err := c.Invoice(ctx, addr, p, 42, bolt11.Mainnet, time.Now()); code(err) != "lightning_address_unreachable" {
		t.Fatalf("wrong network: %v", err)
	}
	srv.Add("liar", func(int64) (string, error) { return signet(7) })
	liar, _ := lnurl.ParseAddress("liar@" + srv.Domain)
	lp, err := c.Resolve(ctx, liar)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(ctx, liar, lp, 42, bolt11.Signet, time.Now()); code(err) != "lightning_address_unreachable" {
		t.Fatalf("wrong amount: %v", err)
	}
	// A description hash must commit to the metadata.
	sum := sha256.Sum256([]byte(srv.Metadata))
	srv.Add("committed", func(s int64) (string, error) { return invoice(&chaincfg.SigNetParams, s, sum[:]) })
	srv.Add("miscommitted", func(s int64) (string, error) { return invoice(&chaincfg.SigNetParams, s, make([]byte, 32)) })
	for user, want := range map[string]string{"committed": "", "miscommitted": "lightning_address_unreachable"} {
		a, _ := lnurl.ParseAddress(user + "@" + srv.Domain)
		ap, err := c.Resolve(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Invoice(ctx, a, ap, 42, bolt11.Signet, time.Now()); code(err) != want {
			t.Errorf("%s: %v, want %q", user, err, want)
		}
	}
	srv.Add("broke", func(int64) (string, error) { return "", errors.New("node offline") })
	broke, _ := lnurl.ParseAddress("broke@" + srv.Domain)
	bp, _ := c.Resolve(ctx, broke)
	_, err = c.Invoice(ctx, broke, bp, 42, bolt11.Signet, time.Now())
	if code(err) != "lightning_address_unreachable" || !strings.Contains(err.Error(), "node offline") {
		t.Fatalf("status ERROR: %v", err)
	}
	unknown, _ := lnurl.ParseAddress("nobody@" + srv.Domain)
	if _, err := c.Resolve(ctx, unknown); code(err) != "lightning_address_unreachable" {
		t.Fatalf("unknown user: %v", err)
	}
}

func TestHostileServers(t *testing.T) {
	t.Parallel()
	handlers := map[string]http.HandlerFunc{
		"slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(30 * time.Second):
			case <-r.Context().Done():
			}
		},
		"huge": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"tag":"payRequest","metadata":"` + strings.Repeat("x", lnurl.MaxBody) + `"}`))
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		},
		"html":   func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) },
		"notpay": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"tag":"withdrawRequest"}`)) },
		"badrange": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"tag":"payRequest","callback":"https://x.example/cb","minSendable":5000,"maxSendable":1000}`))
		},
		"nocallback": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"tag":"payRequest","minSendable":1000,"maxSendable":5000}`))
		},
	}
	mux := http.NewServeMux()
	for name, h := range handlers {
		mux.HandleFunc("/.well-known/lnurlp/"+name, h)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	domain := strings.TrimPrefix(srv.URL, "http://")
	strict := lnurl.New(lnurl.Options{AllowHTTP: false, AllowPrivate: true, Timeout: time.Second})
	hostile := lnurl.New(lnurl.Options{AllowHTTP: true, AllowPrivate: true, Timeout: time.Second})
	for name := range handlers {
		t.Run(name, func(t *testing.T) {
			a, _ := lnurl.ParseAddress(name + "@" + domain)
			start := time.Now()
			_, err := hostile.Resolve(context.Background(), a)
			if code(err) != "lightning_address_unreachable" {
				t.Fatalf("got %v, want lightning_address_unreachable", err)
			}
			// The slow server holds on for 30 s: well before that means the
			// client's 1 s timeout cut it off.
			if time.Since(start) > 20*time.Second {
				t.Fatalf("took %v; the timeout is 1s", time.Since(start))
			}
		})
	}
	// Without AllowHTTP the loopback address is fetched over https, which
	// this plain server does not speak.
	a, _ := lnurl.ParseAddress("notpay@" + domain)
	if _, err := strict.Resolve(context.Background(), a); code(err) != "lightning_address_unreachable" {
		t.Fatalf("https to a plain server: %v", err)
	}
}

// A Lightning address, or a callback, at an address outside the public
// internet is refused before any connection is made, for every range the
// prober refuses too.
func TestRefusesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	c := lnurl.New(lnurl.Options{Timeout: time.Second})
	for _, ip := range netguardtest.Blocked {
		addr, err := lnurl.ParseAddress("alice@" + netguardtest.URLHost(ip))
		if err != nil {
			t.Fatalf("%s: %v", ip, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = c.Resolve(ctx, addr)
		cancel()
		if code(err) != "lightning_address_unreachable" || !strings.Contains(err.Error(), "private") {
			t.Errorf("%s: %v, want it refused as a private address", addr, err)
		}
	}
}

func TestRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv := lnurltest.New(t)
	addr, _ := lnurl.ParseAddress(srv.Add("alice", signet))
	c := lnurl.New(lnurl.Options{AllowHTTP: true, Timeout: time.Second})
	_, err := c.Resolve(context.Background(), addr)
	if code(err) != "lightning_address_unreachable" || !strings.Contains(err.Error(), "private") {
		t.Fatalf("loopback without AllowPrivate: %v", err)
	}
	if srv.Invoices("alice") != 0 {
		t.Fatal("the server was called")
	}
}
