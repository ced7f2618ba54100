package bolt11

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"
	"github.com/outpost-relay/outpost"
)

// makeInvoice signs a real bolt11 invoice on params' network.
func makeInvoice(t *testing.T, params *chaincfg.Params, sats int64, at time.Time, expiry time.Duration) string {
	t.Helper()
	var hash [32]byte
	rand.Read(hash[:])
	opts := []func(*zpay32.Invoice){zpay32.Description("test"), zpay32.Expiry(expiry)}
	if sats > 0 {
		opts = append(opts, zpay32.Amount(lnwire.MilliSatoshi(sats*1000)))
	}
	inv, err := zpay32.NewInvoice(params, hash, at, opts...)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := secp256k1.GeneratePrivateKey()
	s, err := inv.Encode(zpay32.MessageSigner{SignCompact: func(msg []byte) ([]byte, error) {
		return ecdsa.SignCompact(key, msg, true)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNetworks(t *testing.T) {
	now := time.Now()
	cases := []struct {
		params *chaincfg.Params
		net    Network
		prefix string
	}{
		{&chaincfg.MainNetParams, Mainnet, "lnbc"},
		{&chaincfg.TestNet3Params, Testnet, "lntb"},
		{&chaincfg.SigNetParams, Signet, "lntbs"},
		{&chaincfg.RegressionNetParams, Regtest, "lnbcrt"},
	}
	for _, c := range cases {
		raw := makeInvoice(t, c.params, 21, now, time.Hour)
		if !strings.HasPrefix(raw, c.prefix) || c.net.Prefix() != c.prefix {
			t.Fatalf("%s: invoice %.10s, Prefix() %s, want %s", c.net, raw, c.net.Prefix(), c.prefix)
		}
		inv, err := Decode("LIGHTNING:" + strings.ToUpper(raw))
		if err != nil {
			t.Fatalf("%s: %v", c.net, err)
		}
		if inv.Network != c.net || inv.AmountMsat != 21000 || len(inv.PaymentHash) != 64 {
			t.Fatalf("%s: decoded %+v", c.net, inv)
		}
		// Every other network refuses it, including the ones whose prefix
		// is a string prefix of this one (lntb/lntbs, lnbc/lnbcrt).
		for _, o := range cases {
			err := inv.Check(o.net, 21, now)
			if o.net == c.net && err != nil {
				t.Errorf("%s invoice on %s: %v", c.net, o.net, err)
			}
			if o.net != c.net && (outpost.AsError(err) == nil || outpost.AsError(err).Code != "wrong_network") {
				t.Errorf("%s invoice on %s: %v, want wrong_network", c.net, o.net, err)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	now := time.Now()
	inv, err := Decode(makeInvoice(t, &chaincfg.SigNetParams, 25, now.Add(-time.Minute), 10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	code := func(err error) string {
		if e := outpost.AsError(err); e != nil && e.Kind == outpost.Unprocessable {
			return e.Code
		}
		return ""
	}
	if err := inv.Check(Signet, 25, now); err != nil {
		t.Fatal(err)
	}
	if c := code(inv.Check(Signet, 24, now)); c != "invoice_amount_mismatch" {
		t.Errorf("wrong amount: %q", c)
	}
	if c := code(inv.Check(Signet, 25, now.Add(9*time.Minute))); c != "invoice_expired" {
		t.Errorf("expired: %q", c)
	}
	noAmount, _ := Decode(makeInvoice(t, &chaincfg.SigNetParams, 0, now, time.Hour))
	if c := code(noAmount.Check(Signet, 25, now)); c != "invoice_amount_mismatch" {
		t.Errorf("amountless: %q", c)
	}
}

func TestDecodeGarbage(t *testing.T) {
	good := makeInvoice(t, &chaincfg.SigNetParams, 10, time.Now(), time.Hour)
	for _, s := range []string{"", "ln", "lnbc", "lightning:", "hello world", "lntbs1", good[:len(good)-3], good + "x",
		strings.Repeat("lnbc1", 5000), "lnbc" + strings.Repeat("1", 100)} {
		_, err := Decode(s)
		if e := outpost.AsError(err); e == nil || e.Code != "invalid_bolt11" || e.Kind != outpost.Invalid {
			t.Errorf("Decode(%.20q) = %v, want 400 invalid_bolt11", s, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("lntbs10n1pjqxyz")
	f.Add("lnbc1")
	f.Fuzz(func(t *testing.T, s string) {
		inv, err := Decode(s)
		if err == nil && inv.PaymentHash == "" {
			t.Fatal("decoded without a payment hash")
		}
	})
}
