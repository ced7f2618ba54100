package faucet

import "slices"

// PublicConfig is GET /config: everything a client needs to know to claim.
type PublicConfig struct {
	Version       string        `json:"version"`
	Network       string        `json:"network"`
	InvoicePrefix string        `json:"invoice_prefix"`
	MintURL       string        `json:"mint_url"`
	TestMint      bool          `json:"test_mint"`
	Enabled       bool          `json:"enabled"`
	PayoutMethods []string      `json:"payout_methods"`
	Amounts       AmountConfig  `json:"amounts"`
	Limits        LimitConfig   `json:"limits"`
	QuoteTTL      int64         `json:"quote_ttl_seconds"`
	NIP98Window   int64         `json:"nip98_window_seconds"`
	Sessions      SessionConfig `json:"sessions"`
	NPubLogin     NPubConfig    `json:"npub_login"`
	Deposits      DepositConfig `json:"deposits"`
}

// AmountConfig is how claim amounts are chosen.
type AmountConfig struct {
	FixedSats *int64   `json:"fixed_sats"` // null when drawn from buckets
	Buckets   []Bucket `json:"buckets"`    // empty when fixed
}

// LimitConfig lists every limit; a null limit is off.
type LimitConfig struct {
	CooldownSeconds       int64  `json:"cooldown_seconds"`
	PerIPClaims           *int64 `json:"per_ip_claims"`
	PerIPWindowSeconds    int64  `json:"per_ip_window_seconds"`
	SitewideClaims        *int64 `json:"sitewide_claims"`
	SitewideWindowSeconds int64  `json:"sitewide_window_seconds"`
	DailyBudgetSats       *int64 `json:"daily_budget_sats"`
	MinBalanceSats        int64  `json:"min_balance_sats"`
	MaxFeeSats            int64  `json:"max_fee_sats"`
	MinAccountAgeSeconds  int64  `json:"min_account_age_seconds"`
	ProfileRefreshSeconds int64  `json:"profile_refresh_seconds"`
}

// SessionConfig gives the session lifetimes.
type SessionConfig struct {
	NIP98TTL int64 `json:"nip98_ttl_seconds"`
	NPubTTL  int64 `json:"npub_ttl_seconds"`
}

// NPubConfig says what an npub login may do.
type NPubConfig struct {
	Enabled       bool     `json:"enabled"`
	PayoutMethods []string `json:"payout_methods"`
	Destination   string   `json:"destination"`
}

// DepositConfig gives the deposit options.
type DepositConfig struct {
	AcceptedMints []string          `json:"accepted_mints"`
	Lightning     LightningDeposits `json:"lightning"`
	Ecash         EcashDeposits     `json:"ecash"`
}

func positiveOrNil(v int64) *int64 {
	if v <= 0 {
		return nil
	}
	return &v
}

// PublicConfig describes the faucet.
func (s *Service) PublicConfig() PublicConfig {
	c := s.cfg
	buckets := c.Buckets
	if c.FixedSats > 0 {
		buckets = []Bucket{}
	}
	secs := func(d interface{ Seconds() float64 }) int64 { return int64(d.Seconds()) }
	return PublicConfig{
		Version: Version, Network: string(c.Network), InvoicePrefix: c.Network.Prefix(), MintURL: s.tr.MintURL(),
		TestMint: c.TestMint != nil, Enabled: c.Enabled, PayoutMethods: s.methods(),
		Amounts: AmountConfig{FixedSats: positiveOrNil(c.FixedSats), Buckets: buckets},
		Limits: LimitConfig{
			CooldownSeconds: secs(c.Cooldown),
			PerIPClaims:     positiveOrNil(int64(c.IPLimit)), PerIPWindowSeconds: secs(c.IPWindow),
			SitewideClaims: positiveOrNil(int64(c.SitewideLimit)), SitewideWindowSeconds: secs(c.SitewideWindow),
			DailyBudgetSats: positiveOrNil(c.DailyBudgetSats), MinBalanceSats: c.MinBalanceSats, MaxFeeSats: c.MaxFeeSats,
			MinAccountAgeSeconds: secs(c.MinAccountAge), ProfileRefreshSeconds: secs(c.ProfileRefresh),
		},
		QuoteTTL:    secs(c.QuoteTTL),
		NIP98Window: secs(c.NIP98Window),
		Sessions:    SessionConfig{NIP98TTL: secs(c.SessionTTL), NPubTTL: secs(c.NPubSessionTTL)},
		NPubLogin:   NPubConfig{Enabled: c.NPubLogin, PayoutMethods: []string{MethodLightningAddress}, Destination: "profile_lud16"},
		Deposits:    DepositConfig{AcceptedMints: s.tr.AcceptedMints(), Lightning: c.lightningDeposits(), Ecash: c.ecashDeposits()},
	}
}

// methods are the payout methods on offer: nutzaps only while they can be
// paid (see nutzapsAvailable).
func (s *Service) methods() []string {
	if s.nutzapsAvailable() {
		return Methods
	}
	return slices.DeleteFunc(slices.Clone(Methods), func(m string) bool { return m == MethodNutzap })
}

// NIP98Window is the clock tolerance of NIP-98 events.
func (s *Service) NIP98Window() int64 { return int64(s.cfg.NIP98Window.Seconds()) }
