package faucet

import (
	"fmt"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/wot"
)

// The faucet's use of the web of trust (package wot): a user's standing,
// which gates claims with --faucet-wot, and his account's age, which counts
// from when outpost first received an event of his — on its relay, from a
// profile relay, or when the web of trust first reached him — and never
// from an event's created_at, which the user signs and may date as he
// likes.

// trust is the web of trust the faucet asks: Config.Trust, or without one
// a web of trust of its own without seeds, which keeps first-seen times.
func (c *Config) trust() error {
	if c.Trust != nil {
		return nil
	}
	w, err := wot.New(wot.Config{DB: c.DB, Log: c.Log, Now: c.Now})
	c.Trust = w
	return err
}

// received records that an event of pk was received now (a profile fetch
// found one), and returns pk's first-seen time; 0 when none is known.
func (s *Service) received(pk string, found bool) int64 {
	k, err := wot.ParseKey(pk)
	if err != nil {
		return 0
	}
	if found {
		if err := s.cfg.Trust.Seen(k); err != nil {
			s.log.Warn("faucet: first-seen time not stored", "pubkey", pk, "err", err)
		}
	}
	at, ok, err := s.cfg.Trust.FirstSeen(k)
	if !ok || err != nil {
		return 0
	}
	return at.Unix()
}

// Standing is pk's standing in the web of trust, nil without one (no seeds).
func (s *Service) Standing(pk string) *wot.Standing {
	if !s.cfg.Trust.Enabled() {
		return nil
	}
	st := s.cfg.Trust.StandingOf(pk)
	return &st
}

// ClaimStanding is a user's standing as the claim gate sees it: what
// /auth/me shows, and the faucet page with it.
type ClaimStanding struct {
	wot.Standing
	Gated        bool    `json:"gated"` // --faucet-wot
	MaxHops      int     `json:"max_hops"`
	MinFollowers int     `json:"min_followers"`
	Missing      *string `json:"missing"` // what the standing lacks for a claim; nil when nothing or not gated
}

// ClaimStanding is pk's standing and what it lacks for a claim; nil
// without a web of trust.
func (s *Service) ClaimStanding(pk string) *ClaimStanding {
	st := s.Standing(pk)
	if st == nil {
		return nil
	}
	cs := &ClaimStanding{Standing: *st, Gated: s.cfg.WoT, MaxHops: s.cfg.WoTMaxHops, MinFollowers: s.cfg.WoTMinFollowers}
	if missing := s.outsideTrust(pk); missing != "" {
		cs.Missing = &missing
	}
	return cs
}

// outsideTrust says what pk's standing lacks for a claim with --faucet-wot
// ("" when nothing, or when the gate is off or there is no web of trust).
func (s *Service) outsideTrust(pk string) string {
	st := s.Standing(pk)
	if !s.cfg.WoT || st == nil {
		return ""
	}
	var missing []string
	switch {
	case st.Hops < 0:
		missing = append(missing, fmt.Sprintf("no one in the web of trust follows you within %d hops of its seeds", s.cfg.WoTMaxHops))
	case st.Hops > s.cfg.WoTMaxHops:
		missing = append(missing, fmt.Sprintf("you are %d hops from the seeds, at most %d are needed", st.Hops, s.cfg.WoTMaxHops))
	}
	if st.Hops > 0 && st.Followers < s.cfg.WoTMinFollowers {
		missing = append(missing, fmt.Sprintf("%d members follow you, %d are needed", st.Followers, s.cfg.WoTMinFollowers))
	}
	return strings.Join(missing, "; ")
}

// trustReasons are the eligibility reasons of pk's standing: none, or
// not_in_web_of_trust.
func (s *Service) trustReasons(pk string) []string {
	if s.outsideTrust(pk) == "" {
		return nil
	}
	return []string{"not_in_web_of_trust"}
}

// checkTrust refuses a claim outside the web of trust, saying what is
// missing.
func (s *Service) checkTrust(pk string) error {
	missing := s.outsideTrust(pk)
	if missing == "" {
		return nil
	}
	st := s.Standing(pk)
	return outpost.Errorf(outpost.Forbidden, "not_in_web_of_trust", "claims are for members of this outpost's web of trust: %s", missing).
		With("hops", st.Hops).With("followers", st.Followers).With("max_hops", s.cfg.WoTMaxHops).With("min_followers", s.cfg.WoTMinFollowers)
}
