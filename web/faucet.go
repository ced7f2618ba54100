package web

import (
	"net/http"
	"time"
)

// faucetConfig is the part of GET /config the page shows.
type faucetConfig struct {
	Network       string   `json:"network"`
	InvoicePrefix string   `json:"invoice_prefix"`
	MintURL       string   `json:"mint_url"`
	TestMint      bool     `json:"test_mint"`
	Enabled       bool     `json:"enabled"`
	PayoutMethods []string `json:"payout_methods"`
	Amounts       struct {
		FixedSats *int64 `json:"fixed_sats"`
		Buckets   []struct {
			AmountSats int64 `json:"amount_sats"`
			Weight     int   `json:"weight"`
		} `json:"buckets"`
	} `json:"amounts"`
	Limits struct {
		CooldownSeconds       int64  `json:"cooldown_seconds"`
		PerIPClaims           *int64 `json:"per_ip_claims"`
		PerIPWindowSeconds    int64  `json:"per_ip_window_seconds"`
		SitewideClaims        *int64 `json:"sitewide_claims"`
		SitewideWindowSeconds int64  `json:"sitewide_window_seconds"`
		MinAccountAgeSeconds  int64  `json:"min_account_age_seconds"`
	} `json:"limits"`
	QuoteTTL  int64 `json:"quote_ttl_seconds"`
	NPubLogin struct {
		Enabled bool `json:"enabled"`
	} `json:"npub_login"`
	Deposits struct {
		AcceptedMints []string `json:"accepted_mints"`
		Lightning     struct {
			Enabled bool  `json:"enabled"`
			MinSats int64 `json:"min_sats"`
			MaxSats int64 `json:"max_sats"`
		} `json:"lightning"`
		Ecash struct {
			Enabled      bool  `json:"enabled"`
			MaxTokenSats int64 `json:"max_token_sats"`
		} `json:"ecash"`
	} `json:"deposits"`
}

type faucetStats struct {
	BalanceSats     *int64 `json:"balance_sats"`
	TotalPaidSats   int64  `json:"total_paid_sats"`
	TotalClaims     int64  `json:"total_claims"`
	Claims24h       int64  `json:"claims_24h"`
	Paid24hSats     int64  `json:"paid_24h_sats"`
	DailyBudgetSats *int64 `json:"daily_budget_sats"`
	DailySpentSats  int64  `json:"daily_spent_sats"`
	UpdatedAt       int64  `json:"updated_at"`
}

type faucetView struct {
	Mount     string
	PublicURL string // NIP-98 events are signed for PublicURL + Mount + path
	Config    faucetConfig
	Stats     faucetStats
	UpdatedAt time.Time
	// OtherMints are the mints besides the faucet's own whose tokens it takes.
	OtherMints []string
}

// handleFaucet renders what anyone may know about the faucet; signing in,
// claiming and giving back are done by faucet.js against the API.
func (p *Pages) handleFaucet(w http.ResponseWriter, r *http.Request) {
	v := faucetView{Mount: p.cfg.Faucet.Mount, PublicURL: p.cfg.PublicURL}
	if err := p.faucet.get(r, "/config", &v.Config); err != nil {
		p.fail(w, r, err)
		return
	}
	if err := p.faucet.get(r, "/stats", &v.Stats); err != nil {
		p.fail(w, r, err)
		return
	}
	v.UpdatedAt = time.Unix(v.Stats.UpdatedAt, 0)
	for _, m := range v.Config.Deposits.AcceptedMints {
		if m != v.Config.MintURL {
			v.OtherMints = append(v.OtherMints, m)
		}
	}
	p.render(w, r, http.StatusOK, "faucet", view{Title: "Test-sats faucet", Section: "faucet", Script: "faucet.js", Main: v})
}
