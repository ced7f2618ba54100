package faucet

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/cashu/minturl"
	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// Settings are the faucet's operator settings, each bound by cmd/outpost to
// the flag its tag names and that flag's OUTPOST_* environment twin. Some
// configure the faucet's parts that cmd/outpost builds: its wallet (MintURL,
// AcceptedMints, TestMintFunding), its Lightning-address client and its
// profile lookup. Start from DefaultSettings; Valid checks them.
type Settings struct {
	Enabled         bool           `flag:"faucet-enabled" usage:"pay claims; false answers them with 503 faucet_disabled"`
	MintURL         string         `flag:"faucet-mint-url" usage:"Cashu mint of the faucet's wallet (default: an embedded test mint on 127.0.0.1 with a fake Lightning network, kept in <data-dir>/faucet)"`
	Network         bolt11.Network `flag:"faucet-network" usage:"Lightning network of the bolt11 invoices paid: signet, testnet, regtest or mainnet"`
	AcceptedMints   []string       `flag:"faucet-accepted-mints" usage:"other mints whose tokens are taken as deposits (swapped over Lightning), comma-separated"`
	ProfileRelays   []string       `flag:"faucet-profile-relays" usage:"relays (wss://...) asked for users' kind-0 profiles and earliest events, besides this one; comma-separated"`
	FixedSats       int64          `flag:"faucet-fixed-sats" usage:"pay every claim this many sats instead of drawing from --faucet-amounts"`
	Buckets         Buckets        `flag:"faucet-amounts" usage:"claim amounts and their weights, sats:weight,..."`
	Cooldown        time.Duration  `flag:"faucet-cooldown" usage:"one paid claim per pubkey per this"`
	IPLimit         int            `flag:"faucet-ip-limit" usage:"claims per client IP per --faucet-ip-window; 0 disables"`
	IPWindow        time.Duration  `flag:"faucet-ip-window" usage:"window of the per-IP limit"`
	SitewideLimit   int            `flag:"faucet-sitewide-limit" usage:"claims per --faucet-sitewide-window over all users; 0 disables"`
	SitewideWindow  time.Duration  `flag:"faucet-sitewide-window" usage:"window of the site-wide limit"`
	DailyBudgetSats int64          `flag:"faucet-daily-budget" usage:"sats paid per UTC day, fees included; 0 disables"`
	MinBalanceSats  int64          `flag:"faucet-min-balance" usage:"refuse claims that would take the wallet below this many sats"`
	MaxFeeSats      int64          `flag:"faucet-max-fee" usage:"the most Lightning fees a payout may cost (the faucet pays them; reserved from the budget)"`
	MinAccountAge   time.Duration  `flag:"faucet-min-account-age" usage:"minimum age of an account, from when outpost first received an event of it (on its relay or from a profile relay) or its web of trust first reached it, never from a date the event carries (e.g. 336h for 14 days)"`
	WoT             bool           `flag:"faucet-wot" usage:"pay only members of the web of trust (--wot-seeds) within --faucet-wot-max-hops and --faucet-wot-min-followers; others get 403 not_in_web_of_trust; without seeds it gates nothing"`
	WoTMaxHops      int            `flag:"faucet-wot-max-hops" usage:"with --faucet-wot: the most hops from the seeds a claimant may be (it reaches no further than --wot-depth)"`
	WoTMinFollowers int            `flag:"faucet-wot-min-followers" usage:"with --faucet-wot: members at a smaller distance who must follow a claimant beyond the seeds"`
	QuoteTTL        time.Duration  `flag:"faucet-quote-ttl" usage:"how long a quote holds its amount"`
	NPubLogin       bool           `flag:"faucet-npub-login" usage:"allow the limited npub login (Lightning-address payouts to the profile's lud16 only)"`
	LoginLimit      int            `flag:"faucet-login-limit" usage:"logins (POST /auth/login and /auth/login-npub together) per client IP per minute, on top of --rate-limit; 0 disables, and so does --rate-limit 0"`
	LNURLAllowHTTP  bool           `flag:"faucet-lnurl-allow-http" usage:"fetch Lightning addresses at IP literals/localhost over plain http (tests and demos only)"`
	LNURLAllowPriv  bool           `flag:"faucet-lnurl-allow-private" usage:"let Lightning addresses point to loopback and private networks (tests and demos only)"`
	NutzapAllowPriv bool           `flag:"faucet-nutzap-allow-private" usage:"let the relays of users' kind-10019 and kind-10002 events (nutzaps) be on loopback and private networks (tests and demos only)"`
	DepositMinSats  int64          `flag:"faucet-deposit-min" usage:"smallest deposit invoice, sats"`
	DepositMaxSats  int64          `flag:"faucet-deposit-max" usage:"largest deposit invoice, sats"`
	MaxTokenSats    int64          `flag:"faucet-max-token" usage:"largest ecash token taken as a deposit, sats; 0 for no cap"`
	TestMintFunding int64          `flag:"faucet-test-mint-funding" usage:"with the embedded test mint: top the wallet up to this many sats when it falls below the minimum balance plus a day's budget"`
	PollInterval    time.Duration  `flag:"faucet-poll-interval" usage:"how often pending payments and deposit invoices are checked"`
	Primary         string         `flag:"faucet-primary" usage:"the URL of the faucet of the outpost that runs it (https://primary.example/faucet), when this one is another node of the same service: the faucet's wallet has one writer, so this node runs none and answers /faucet/... with 503 faucet_elsewhere naming it"`
	MintWithoutDLEQ bool           `flag:"faucet-mint-without-dleq" usage:"use a mint that does not advertise DLEQ proofs (NUT-12): its signatures cannot be checked, so a bad one is found out only when spent; /faucet/health says degraded"`
}

// DefaultSettings are the defaults docs/configuration.md lists.
func DefaultSettings() Settings {
	return Settings{
		Enabled: true, Network: bolt11.Signet, Buckets: Buckets{{10, 50}, {25, 30}, {50, 15}, {100, 5}},
		Cooldown: 24 * time.Hour, IPLimit: 3, IPWindow: 24 * time.Hour, SitewideLimit: 20, SitewideWindow: time.Hour,
		DailyBudgetSats: 5000, MinBalanceSats: 1000, MaxFeeSats: 10, QuoteTTL: 120 * time.Second, NPubLogin: true, LoginLimit: 20,
		DepositMinSats: 1, DepositMaxSats: 1_000_000, MaxTokenSats: 100_000, TestMintFunding: 100_000,
		PollInterval: 5 * time.Second, WoTMaxHops: 2, WoTMinFollowers: 1,
	}
}

// Valid checks every setting, naming each bad one, and gives mint URLs
// their one spelling (minturl).
func (s *Settings) Valid() error {
	if s.Primary != "" {
		return validPrimary(s.Primary) // the rest is the primary's business
	}
	return errors.Join(s.validPeers(), s.validLimits())
}

// validPrimary checks --faucet-primary: an http(s) URL, no credentials.
func validPrimary(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return settings.Errorf("faucet-primary", "want the http(s) URL of the faucet that runs elsewhere, like https://primary.example/faucet")
	}
	return nil
}

// validPeers checks the network and whom the faucet talks to.
func (s *Settings) validPeers() error {
	var errs []error
	bad := func(flag, format string, args ...any) { errs = append(errs, settings.Errorf(flag, format, args...)) }
	if _, err := bolt11.ParseNetwork(string(s.Network)); err != nil {
		bad("faucet-network", "%v", err)
	}
	if s.MintURL != "" {
		var err error
		if s.MintURL, err = minturl.Normalize(s.MintURL); err != nil {
			bad("faucet-mint-url", "%v", err)
		}
	}
	for i, m := range s.AcceptedMints {
		n, err := minturl.Normalize(m)
		if err != nil {
			bad("faucet-accepted-mints", "%q: %v", m, err)
		}
		s.AcceptedMints[i] = n
	}
	for _, r := range s.ProfileRelays {
		if u, err := url.Parse(r); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			bad("faucet-profile-relays", "%q is not a ws:// or wss:// relay URL", r)
		}
	}
	return errors.Join(errs...)
}

// validLimits checks amounts, limits and times.
func (s *Settings) validLimits() error {
	var errs []error
	bad := func(flag, format string, args ...any) { errs = append(errs, settings.Errorf(flag, format, args...)) }
	if err := s.Buckets.valid(); err != nil {
		bad("faucet-amounts", "%v", err)
	}
	for _, n := range []struct {
		flag string
		v    int64
	}{
		{"faucet-fixed-sats", s.FixedSats}, {"faucet-ip-limit", int64(s.IPLimit)}, {"faucet-sitewide-limit", int64(s.SitewideLimit)},
		{"faucet-daily-budget", s.DailyBudgetSats}, {"faucet-min-balance", s.MinBalanceSats}, {"faucet-max-fee", s.MaxFeeSats},
		{"faucet-max-token", s.MaxTokenSats}, {"faucet-test-mint-funding", s.TestMintFunding}, {"faucet-login-limit", int64(s.LoginLimit)},
	} {
		if n.v < 0 {
			bad(n.flag, "must be 0 or more")
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"faucet-cooldown", s.Cooldown}, {"faucet-ip-window", s.IPWindow}, {"faucet-sitewide-window", s.SitewideWindow}} {
		if d.v <= 0 {
			bad(d.flag, "must be positive")
		}
	}
	if s.MinAccountAge < 0 {
		bad("faucet-min-account-age", "must be 0 or more")
	}
	if s.WoTMaxHops < 0 || s.WoTMinFollowers < 0 {
		bad("faucet-wot-max-hops", "--faucet-wot-max-hops and --faucet-wot-min-followers must be 0 or more")
	}
	if s.QuoteTTL < 10*time.Second || s.QuoteTTL > time.Hour {
		bad("faucet-quote-ttl", "must be between 10s and 1h")
	}
	if s.DepositMinSats < 1 || s.DepositMaxSats < s.DepositMinSats {
		bad("faucet-deposit-min", "must be at least 1 and at most --faucet-deposit-max")
	}
	if s.PollInterval < 100*time.Millisecond {
		bad("faucet-poll-interval", "must be at least 100ms")
	}
	if smallest := s.minAmount(); s.DailyBudgetSats > 0 && smallest > 0 && smallest+s.MaxFeeSats > s.DailyBudgetSats {
		bad("faucet-daily-budget", "%d sats cannot pay even the smallest claim (%d sats plus %d in fees)", s.DailyBudgetSats, smallest, s.MaxFeeSats)
	}
	return errors.Join(errs...)
}

// minAmount is the smallest amount a claim can be: the fixed amount, or the
// smallest that can be drawn (weight above 0); 0 when there is none.
func (s *Settings) minAmount() int64 {
	if s.FixedSats > 0 {
		return s.FixedSats
	}
	var m int64
	for _, b := range s.Buckets {
		if b.Weight > 0 && (m == 0 || b.AmountSats < m) {
			m = b.AmountSats
		}
	}
	return m
}

// Bucket is one possible claim amount and its weight.
type Bucket struct {
	AmountSats int64 `json:"amount_sats"`
	Weight     int   `json:"weight"`
}

// Buckets are the amounts a claim is drawn from, written as
// "sats:weight,sats:weight" in settings.
type Buckets []Bucket

// UnmarshalText reads "sats:weight,sats:weight".
func (bs *Buckets) UnmarshalText(text []byte) error {
	var out Buckets
	for _, part := range strings.Split(string(text), ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		a, w, ok := strings.Cut(part, ":")
		sats, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		weight, err2 := strconv.Atoi(strings.TrimSpace(w))
		if !ok || err1 != nil || err2 != nil || sats <= 0 || weight < 0 {
			return fmt.Errorf("%q is not sats:weight with sats > 0 and weight ≥ 0", part)
		}
		out = append(out, Bucket{AmountSats: sats, Weight: weight})
	}
	if err := out.valid(); err != nil {
		return err
	}
	*bs = out
	return nil
}

// MarshalText writes "sats:weight,sats:weight".
func (bs Buckets) MarshalText() ([]byte, error) {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("%d:%d", b.AmountSats, b.Weight)
	}
	return []byte(strings.Join(parts, ",")), nil
}

func (bs Buckets) valid() error {
	total := 0
	for _, b := range bs {
		if b.AmountSats <= 0 || b.Weight < 0 {
			return fmt.Errorf("%d:%d is not sats:weight with sats > 0 and weight ≥ 0", b.AmountSats, b.Weight)
		}
		total += b.Weight
	}
	if total == 0 {
		return errors.New("needs at least one amount with a weight above 0")
	}
	return nil
}
