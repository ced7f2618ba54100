package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/bolt11"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/minturl"
)

// FaucetConfig configures the test-sats faucet.
type FaucetConfig struct {
	Mount           string
	Enabled         bool
	MintURL         string // "" runs the embedded test mint
	Network         bolt11.Network
	AcceptedMints   []string
	ProfileRelays   []string
	FixedSats       int64
	Buckets         []faucet.Bucket
	Cooldown        time.Duration
	IPLimit         int
	IPWindow        time.Duration
	SitewideLimit   int
	SitewideWindow  time.Duration
	DailyBudgetSats int64
	MinBalanceSats  int64
	MaxFeeSats      int64
	MinAccountAge   time.Duration
	QuoteTTL        time.Duration
	NPubLogin       bool
	LNURLAllowHTTP  bool
	LNURLAllowPriv  bool
	DepositMinSats  int64
	DepositMaxSats  int64
	MaxTokenSats    int64
	TestMintFunding int64
	PollInterval    time.Duration

	network, amounts string // as given, parsed by validateFaucet
}

func registerFaucetFlags(f *configFlags) {
	c, fs := &f.c.Faucet, f.fs
	fs.StringVar(&c.Mount, "faucet-mount", "/faucet", "mount path of the faucet")
	fs.BoolVar(&c.Enabled, "faucet-enabled", true, "pay claims; false answers them with 503 faucet_disabled")
	fs.StringVar(&c.MintURL, "faucet-mint-url", "", "Cashu mint of the faucet's wallet (default: an embedded test mint on 127.0.0.1 with a fake Lightning network, kept in <data-dir>/faucet)")
	fs.StringVar(&c.network, "faucet-network", "signet", "Lightning network of the bolt11 invoices paid: signet, testnet, regtest or mainnet")
	f.list("faucet-accepted-mints", "other mints whose tokens are taken as deposits (swapped over Lightning), comma-separated")
	f.list("faucet-profile-relays", "relays (wss://...) asked for users' kind-0 profiles and earliest events, besides this one; comma-separated")
	fs.Int64Var(&c.FixedSats, "faucet-fixed-sats", 0, "pay every claim this many sats instead of drawing from --faucet-amounts")
	fs.StringVar(&c.amounts, "faucet-amounts", "10:50,25:30,50:15,100:5", "claim amounts and their weights, sats:weight,...")
	fs.DurationVar(&c.Cooldown, "faucet-cooldown", 24*time.Hour, "one paid claim per pubkey per this")
	fs.IntVar(&c.IPLimit, "faucet-ip-limit", 3, "claims per client IP per --faucet-ip-window; 0 disables")
	fs.DurationVar(&c.IPWindow, "faucet-ip-window", 24*time.Hour, "window of the per-IP limit")
	fs.IntVar(&c.SitewideLimit, "faucet-sitewide-limit", 20, "claims per --faucet-sitewide-window over all users; 0 disables")
	fs.DurationVar(&c.SitewideWindow, "faucet-sitewide-window", time.Hour, "window of the site-wide limit")
	fs.Int64Var(&c.DailyBudgetSats, "faucet-daily-budget", 5000, "sats paid per UTC day, fees included; 0 disables")
	fs.Int64Var(&c.MinBalanceSats, "faucet-min-balance", 1000, "refuse claims that would take the wallet below this many sats")
	fs.Int64Var(&c.MaxFeeSats, "faucet-max-fee", 10, "the most Lightning fees a payout may cost (the faucet pays them; reserved from the budget)")
	fs.DurationVar(&c.MinAccountAge, "faucet-min-account-age", 0, "minimum age of an account, from its earliest event seen (e.g. 336h for 14 days)")
	fs.DurationVar(&c.QuoteTTL, "faucet-quote-ttl", 120*time.Second, "how long a quote holds its amount")
	fs.BoolVar(&c.NPubLogin, "faucet-npub-login", true, "allow the limited npub login (Lightning-address payouts to the profile's lud16 only)")
	fs.BoolVar(&c.LNURLAllowHTTP, "faucet-lnurl-allow-http", false, "fetch Lightning addresses at IP literals/localhost over plain http (tests and demos only)")
	fs.BoolVar(&c.LNURLAllowPriv, "faucet-lnurl-allow-private", false, "let Lightning addresses point to loopback and private networks (tests and demos only)")
	fs.Int64Var(&c.DepositMinSats, "faucet-deposit-min", 1, "smallest deposit invoice, sats")
	fs.Int64Var(&c.DepositMaxSats, "faucet-deposit-max", 1_000_000, "largest deposit invoice, sats")
	fs.Int64Var(&c.MaxTokenSats, "faucet-max-token", 100_000, "largest ecash token taken as a deposit, sats; 0 for no cap")
	fs.Int64Var(&c.TestMintFunding, "faucet-test-mint-funding", 100_000, "with the embedded test mint: top the wallet up to this many sats when it runs low")
	fs.DurationVar(&c.PollInterval, "faucet-poll-interval", 5*time.Second, "how often pending payments and deposit invoices are checked")
}

func validateFaucet(f *configFlags) error {
	c := &f.c.Faucet
	var errs []error
	if err := validMount(c.Mount); err != nil {
		errs = append(errs, bad("faucet-mount", "%v", err))
	} else if c.Mount == f.c.Banlist.Mount {
		errs = append(errs, bad("faucet-mount", "%s is the ban list's mount path", c.Mount))
	}
	net, err := bolt11.ParseNetwork(c.network)
	if err != nil {
		errs = append(errs, bad("faucet-network", "%v", err))
	}
	c.Network = net
	if c.MintURL != "" {
		if c.MintURL, err = minturl.Normalize(c.MintURL); err != nil {
			errs = append(errs, bad("faucet-mint-url", "%v", err))
		}
	}
	c.AcceptedMints = nil
	for _, m := range split(*f.lists["faucet-accepted-mints"]) {
		n, err := minturl.Normalize(m)
		if err != nil {
			errs = append(errs, bad("faucet-accepted-mints", "%q: %v", m, err))
			continue
		}
		c.AcceptedMints = append(c.AcceptedMints, n)
	}
	c.ProfileRelays = nil
	for _, r := range split(*f.lists["faucet-profile-relays"]) {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			errs = append(errs, bad("faucet-profile-relays", "%q is not a ws:// or wss:// relay URL", r))
			continue
		}
		c.ProfileRelays = append(c.ProfileRelays, r)
	}
	if c.Buckets, err = parseBuckets(c.amounts); err != nil {
		errs = append(errs, bad("faucet-amounts", "%v", err))
	}
	for _, n := range []struct {
		flag string
		v    int64
	}{
		{"faucet-fixed-sats", c.FixedSats}, {"faucet-ip-limit", int64(c.IPLimit)}, {"faucet-sitewide-limit", int64(c.SitewideLimit)},
		{"faucet-daily-budget", c.DailyBudgetSats}, {"faucet-min-balance", c.MinBalanceSats}, {"faucet-max-fee", c.MaxFeeSats},
		{"faucet-max-token", c.MaxTokenSats}, {"faucet-test-mint-funding", c.TestMintFunding},
	} {
		if n.v < 0 {
			errs = append(errs, bad(n.flag, "must be 0 or more"))
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"faucet-cooldown", c.Cooldown}, {"faucet-ip-window", c.IPWindow}, {"faucet-sitewide-window", c.SitewideWindow},
	} {
		if d.v <= 0 {
			errs = append(errs, bad(d.flag, "must be positive"))
		}
	}
	if c.MinAccountAge < 0 {
		errs = append(errs, bad("faucet-min-account-age", "must be 0 or more"))
	}
	if c.QuoteTTL < 10*time.Second || c.QuoteTTL > time.Hour {
		errs = append(errs, bad("faucet-quote-ttl", "must be between 10s and 1h"))
	}
	if c.DepositMinSats < 1 || c.DepositMaxSats < c.DepositMinSats {
		errs = append(errs, bad("faucet-deposit-min", "must be at least 1 and at most --faucet-deposit-max"))
	}
	if c.PollInterval < 100*time.Millisecond {
		errs = append(errs, bad("faucet-poll-interval", "must be at least 100ms"))
	}
	if c.DailyBudgetSats > 0 && len(c.Buckets) > 0 {
		smallest := c.FixedSats
		if smallest == 0 {
			smallest = c.Buckets[0].AmountSats
			for _, b := range c.Buckets {
				smallest = min(smallest, b.AmountSats)
			}
		}
		if smallest+c.MaxFeeSats > c.DailyBudgetSats {
			errs = append(errs, bad("faucet-daily-budget", "%d sats cannot pay even the smallest claim (%d sats plus %d in fees)", c.DailyBudgetSats, smallest, c.MaxFeeSats))
		}
	}
	return errors.Join(errs...)
}

// parseBuckets reads "sats:weight,sats:weight".
func parseBuckets(s string) ([]faucet.Bucket, error) {
	var out []faucet.Bucket
	total := 0
	for _, part := range split(s) {
		a, w, ok := strings.Cut(part, ":")
		sats, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		weight, err2 := strconv.Atoi(strings.TrimSpace(w))
		if !ok || err1 != nil || err2 != nil || sats <= 0 || weight < 0 {
			return nil, fmt.Errorf("%q is not sats:weight with sats > 0 and weight ≥ 0", part)
		}
		out = append(out, faucet.Bucket{AmountSats: sats, Weight: weight})
		total += weight
	}
	if total == 0 {
		return nil, errors.New("needs at least one amount with a weight above 0")
	}
	return out, nil
}
