// Package bolt11 decodes Lightning invoices and checks them against what the
// faucet is about to pay: the network it runs on, the amount a quote locked
// and the invoice's expiry.
package bolt11

import (
	"fmt"
	"strings"
	"time"

	decodepay "github.com/nbd-wtf/ln-decodepay"
	"github.com/outpost-relay/outpost"
)

// Network is a Lightning network, named as OUTPOST_FAUCET_NETWORK names it.
type Network string

const (
	Mainnet Network = "mainnet"
	Testnet Network = "testnet"
	Signet  Network = "signet"
	Regtest Network = "regtest"
)

// currencies maps each network to its bech32 currency prefix (BOLT 11):
// lnbc, lntb, lntbs, lnbcrt. The prefixes overlap as strings ("lntbs" starts
// with "lntb"), so invoices are compared on the decoded prefix, never with
// strings.HasPrefix.
var currencies = map[Network]string{Mainnet: "bc", Testnet: "tb", Signet: "tbs", Regtest: "bcrt"}

// ParseNetwork accepts mainnet, testnet, signet (also mutinynet, a signet) and regtest.
func ParseNetwork(s string) (Network, error) {
	n := Network(strings.ToLower(strings.TrimSpace(s)))
	if n == "mutinynet" {
		n = Signet
	}
	if _, ok := currencies[n]; !ok {
		return "", fmt.Errorf("unknown network %q (mainnet, testnet, signet or regtest)", s)
	}
	return n, nil
}

// Prefix is the invoice prefix of the network, e.g. "lntbs" for signet.
func (n Network) Prefix() string { return "ln" + currencies[n] }

func networkOf(currency string) Network {
	for n, c := range currencies {
		if c == currency {
			return n
		}
	}
	return ""
}

// MaxLen caps what Decode looks at; real invoices are well under 2 KiB
// unless they carry many route hints.
const MaxLen = 8 << 10

// Invoice is a decoded bolt11 invoice.
type Invoice struct {
	Raw             string
	Currency        string  // bech32 currency prefix without "ln": "tbs", "bc", ...
	Network         Network // "" when the currency is none of ours
	AmountMsat      int64   // 0 for an invoice without an amount
	PaymentHash     string
	DescriptionHash string // hex; "" when the invoice carries a plain description
	CreatedAt       time.Time
	ExpiresAt       time.Time
}

func invalid(format string, args ...any) *outpost.Error {
	return outpost.Errorf(outpost.Invalid, "invalid_bolt11", format, args...)
}

// Decode parses a bolt11 invoice (an optional "lightning:" prefix is
// dropped). Anything that is not one is a 400 invalid_bolt11.
func Decode(s string) (inv Invoice, err error) {
	s = strings.TrimSpace(s)
	if len(s) > 10 && strings.EqualFold(s[:10], "lightning:") {
		s = s[10:]
	}
	s = strings.ToLower(s)
	if len(s) < 8 || !strings.HasPrefix(s, "ln") {
		return Invoice{}, invalid("not a bolt11 invoice")
	}
	if len(s) > MaxLen {
		return Invoice{}, invalid("the invoice is longer than %d characters", MaxLen)
	}
	// zpay32 is a large parser fed with user input; a panic in it must
	// not take the request down with a 500.
	defer func() {
		if r := recover(); r != nil {
			inv, err = Invoice{}, invalid("the invoice could not be decoded")
		}
	}()
	d, derr := decodepay.Decodepay(s)
	if derr != nil {
		return Invoice{}, invalid("the invoice could not be decoded")
	}
	created := time.Unix(int64(d.CreatedAt), 0)
	return Invoice{
		Raw: s, Currency: d.Currency, Network: networkOf(d.Currency), AmountMsat: d.MSatoshi,
		PaymentHash: d.PaymentHash, DescriptionHash: d.DescriptionHash,
		CreatedAt: created, ExpiresAt: created.Add(time.Duration(d.Expiry) * time.Second),
	}, nil
}

// Check refuses an invoice on another network (422 wrong_network), for
// another amount than amountSats (422 invoice_amount_mismatch), or expired
// at now (422 invoice_expired).
func (inv Invoice) Check(network Network, amountSats int64, now time.Time) error {
	if inv.Network != network {
		return outpost.Errorf(outpost.Unprocessable, "wrong_network",
			"this faucet pays %s invoices (%s...), got an invoice with prefix ln%s", network, network.Prefix(), inv.Currency).
			With("expected_prefix", network.Prefix())
	}
	if inv.AmountMsat != amountSats*1000 {
		e := outpost.Errorf(outpost.Unprocessable, "invoice_amount_mismatch",
			"the invoice must be for exactly %d sats", amountSats).With("expected_sats", amountSats)
		if inv.AmountMsat == 0 {
			e.Message = fmt.Sprintf("the invoice has no amount; it must be for exactly %d sats", amountSats)
		}
		return e
	}
	if !now.Before(inv.ExpiresAt) {
		return outpost.Errorf(outpost.Unprocessable, "invoice_expired", "the invoice expired at %s", inv.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// UnmarshalText parses a network as ParseNetwork does (for settings).
func (n *Network) UnmarshalText(b []byte) error {
	v, err := ParseNetwork(string(b))
	if err == nil {
		*n = v
	}
	return err
}

// MarshalText is the network's name.
func (n Network) MarshalText() ([]byte, error) { return []byte(n), nil }
