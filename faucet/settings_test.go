package faucet

import (
	"strings"
	"testing"
	"time"
)

// An amount of weight 0 is never drawn, so it is not the smallest claim:
// eligibility and the budget check must not count on it.
func TestMinAmountIgnoresUnweightedBuckets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    Settings
		want int64
	}{
		{Settings{Buckets: Buckets{{1, 0}, {100, 1}}}, 100},
		{Settings{Buckets: Buckets{{50, 1}, {10, 2}, {5, 0}}}, 10},
		{Settings{FixedSats: 21, Buckets: Buckets{{1, 1}}}, 21},
	} {
		if got := tt.s.minAmount(); got != tt.want {
			t.Errorf("%v: got %d, want %d", tt.s.Buckets, got, tt.want)
		}
	}
}

func TestSettingsValid(t *testing.T) {
	t.Parallel()
	d := DefaultSettings()
	if err := d.Valid(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tt := range []struct {
		mod  func(*Settings)
		flag string
	}{
		{func(s *Settings) { s.Network = "bitcoin" }, "faucet-network"},
		{func(s *Settings) { s.MintURL = "ftp://mint" }, "faucet-mint-url"},
		{func(s *Settings) { s.AcceptedMints = []string{"mint"} }, "faucet-accepted-mints"},
		{func(s *Settings) { s.ProfileRelays = []string{"http://relay"} }, "faucet-profile-relays"},
		{func(s *Settings) { s.Buckets = Buckets{{10, 0}} }, "faucet-amounts"},
		{func(s *Settings) { s.IPLimit = -1 }, "faucet-ip-limit"},
		{func(s *Settings) { s.Cooldown = 0 }, "faucet-cooldown"},
		{func(s *Settings) { s.QuoteTTL = time.Second }, "faucet-quote-ttl"},
		{func(s *Settings) { s.DepositMinSats = 0 }, "faucet-deposit-min"},
		{func(s *Settings) { s.PollInterval = time.Millisecond }, "faucet-poll-interval"},
		{func(s *Settings) { s.DailyBudgetSats = 5 }, "faucet-daily-budget"},
		// The only amount drawn is 100: a budget of 50 pays no claim.
		{func(s *Settings) { s.Buckets, s.DailyBudgetSats = Buckets{{1, 0}, {100, 1}}, 50 }, "faucet-daily-budget"},
	} {
		s := DefaultSettings()
		tt.mod(&s)
		if err := s.Valid(); err == nil || !strings.Contains(err.Error(), "--"+tt.flag+" ") {
			t.Errorf("%s: %v, want an error naming it", tt.flag, err)
		}
	}
	s := DefaultSettings()
	s.MintURL, s.AcceptedMints = "HTTPS://Mint.Example:443/", []string{" https://other.example./ "}
	if err := s.Valid(); err != nil || s.MintURL != "https://mint.example" || s.AcceptedMints[0] != "https://other.example" {
		t.Errorf("mint URLs: %q %q %v", s.MintURL, s.AcceptedMints, err)
	}
}

func TestBucketsText(t *testing.T) {
	t.Parallel()
	var b Buckets
	if err := b.UnmarshalText([]byte(" 10:50, 25:30,100:0 ")); err != nil {
		t.Fatal(err)
	}
	if text, _ := b.MarshalText(); string(text) != "10:50,25:30,100:0" {
		t.Errorf("round trip: %s", text)
	}
	for _, bad := range []string{"", "10", "10:x", "0:1", "10:-1", "10:0"} {
		if err := b.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
