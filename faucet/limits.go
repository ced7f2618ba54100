package faucet

import (
	"encoding/json"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

func jsonBytes(v any) ([]byte, error) { return json.Marshal(v) }

// Every limit is one record that each claim's transaction reads and writes,
// so two concurrent claims conflict and one of them retries and sees the
// other's reservation. (Counting separate keys by iteration would let both
// commit: badger does not see a key it never read.)

// cooldown is a pubkey's reservation: no other claim until Until.
type cooldown struct {
	Until   int64  `json:"until"`
	ClaimID string `json:"claim_id"`
}

// window holds the claims of the last period, for the per-IP and site-wide limits.
type window struct {
	Entries []windowEntry `json:"entries"`
}

type windowEntry struct {
	ClaimID string `json:"claim_id"`
	At      int64  `json:"at"`
}

// live drops entries older than the period and returns the rest.
func (w *window) live(now time.Time, period time.Duration) []windowEntry {
	since := now.Add(-period).Unix()
	out := w.Entries[:0:0]
	for _, e := range w.Entries {
		if e.At > since {
			out = append(out, e)
		}
	}
	return out
}

// budget is what a UTC day's claims spent or reserved.
type budget struct {
	SpentSats int64 `json:"spent_sats"`
}

// totals are the all-time figures of /stats.
type totals struct {
	PaidSats       int64 `json:"paid_sats"`
	FeeSats        int64 `json:"fee_sats"`
	Claims         int64 `json:"claims"`
	DepositedSats  int64 `json:"deposited_sats"`
	DepositFeeSats int64 `json:"deposit_fee_sats"`
	Deposits       int64 `json:"deposits"`
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

func nextDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

func limited(reason string, retryAt, now time.Time, format string, args ...any) *outpost.Error {
	wait := max(retryAt.Sub(now), time.Second)
	e := outpost.Errorf(outpost.RateLimited, "rate_limit_exceeded", format, args...).
		With("reason", reason).With("retry_at", retryAt.Unix())
	e.RetryAfter = wait
	return e
}

// limits reads the limit records a claim touches.
type limits struct {
	cooldown cooldown
	ip       window
	sitewide window
	budget   budget
}

func (s *Service) readLimits(txn *kv.Txn, pk, ipHash string, now time.Time) (limits, error) {
	var l limits
	for _, r := range []struct {
		k []byte
		v any
	}{
		{key(kindCooldown, pk), &l.cooldown},
		{key(kindIPWindow, ipHash), &l.ip},
		{key(kindSitewide), &l.sitewide},
		{key(kindBudget, day(now)), &l.budget},
	} {
		if _, err := kv.GetJSON(txn, r.k, r.v); err != nil {
			return limits{}, err
		}
	}
	l.ip.Entries = l.ip.live(now, s.cfg.IPWindow)
	l.sitewide.Entries = l.sitewide.live(now, s.cfg.SitewideWindow)
	return l, nil
}

// check refuses a claim of amountSats that a limit forbids, in the order
// docs/faucet.md ("Claims") lists them: cooldown, client IP, site-wide,
// budget.
func (s *Service) check(l limits, amountSats int64, now time.Time) error {
	if until := time.Unix(l.cooldown.Until, 0); now.Before(until) {
		return limited("cooldown", until, now, "one claim per %s; the next one is possible at %s",
			s.cfg.Cooldown, until.UTC().Format(time.RFC3339)).With("next_claim_at", until.Unix())
	}
	if s.cfg.IPLimit > 0 && len(l.ip.Entries) >= s.cfg.IPLimit {
		at := time.Unix(l.ip.Entries[0].At, 0).Add(s.cfg.IPWindow)
		return limited("ip_limit", at, now, "at most %d claims per client address per %s", s.cfg.IPLimit, s.cfg.IPWindow)
	}
	if s.cfg.SitewideLimit > 0 && len(l.sitewide.Entries) >= s.cfg.SitewideLimit {
		at := time.Unix(l.sitewide.Entries[0].At, 0).Add(s.cfg.SitewideWindow)
		return limited("sitewide_limit", at, now, "the faucet pays at most %d claims per %s; try again later", s.cfg.SitewideLimit, s.cfg.SitewideWindow)
	}
	if s.cfg.DailyBudgetSats > 0 && l.budget.SpentSats+amountSats+s.cfg.MaxFeeSats > s.cfg.DailyBudgetSats {
		e := outpost.Errorf(outpost.Unavailable, "budget_exhausted", "today's budget of %d sats is spent; the faucet pays again from %s",
			s.cfg.DailyBudgetSats, nextDay(now).Format(time.RFC3339))
		e.RetryAfter = nextDay(now).Sub(now)
		return e
	}
	return nil
}

// checkBalance refuses a claim that would take the wallet below the minimum.
func (s *Service) checkBalance(amountSats int64) error {
	if err := s.tr.Ready(); err != nil {
		return err // the mint is unreachable or incompatible
	}
	// The change operations in flight will give back counts: a burst of
	// claims is not refused while their swaps are out (the wallet queues).
	if s.tr.Available()-amountSats-s.cfg.MaxFeeSats < s.cfg.MinBalanceSats {
		return outpost.Errorf(outpost.Unavailable, "insufficient_funds", "the faucet is low on sats; deposits are welcome (see /deposit)")
	}
	return nil
}

// reserve writes a claim's reservations: the cooldown, its place in the IP
// and site-wide windows, and amount plus the fee allowance in today's budget.
func (s *Service) reserve(txn *kv.Txn, l limits, c *Claim, now time.Time) error {
	l.cooldown = cooldown{Until: now.Add(s.cfg.Cooldown).Unix(), ClaimID: c.ID}
	e := windowEntry{ClaimID: c.ID, At: now.Unix()}
	l.ip.Entries = append(l.ip.Entries, e)
	l.sitewide.Entries = append(l.sitewide.Entries, e)
	l.budget.SpentSats += c.AmountSats + c.FeeReserveSats
	for _, r := range []struct {
		k []byte
		v any
	}{
		{key(kindCooldown, c.PubKey), l.cooldown},
		{key(kindIPWindow, c.IPHash), l.ip},
		{key(kindSitewide), l.sitewide},
		{key(kindBudget, c.Day), l.budget},
	} {
		if err := kv.PutJSON(txn, r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

// release gives a failed claim's reservations back.
func (s *Service) release(txn *kv.Txn, c *Claim) error {
	var cd cooldown
	if _, err := kv.GetJSON(txn, key(kindCooldown, c.PubKey), &cd); err != nil {
		return err
	}
	if cd.ClaimID == c.ID {
		if err := txn.Delete(key(kindCooldown, c.PubKey)); err != nil {
			return err
		}
	}
	for _, k := range [][]byte{key(kindIPWindow, c.IPHash), key(kindSitewide)} {
		var w window
		if _, err := kv.GetJSON(txn, k, &w); err != nil {
			return err
		}
		kept := w.Entries[:0:0]
		for _, e := range w.Entries {
			if e.ClaimID != c.ID {
				kept = append(kept, e)
			}
		}
		w.Entries = kept
		if err := kv.PutJSON(txn, k, w); err != nil {
			return err
		}
	}
	return s.adjustBudget(txn, c, -(c.AmountSats + c.FeeReserveSats))
}

func (s *Service) adjustBudget(txn *kv.Txn, c *Claim, deltaSats int64) error {
	var b budget
	if _, err := kv.GetJSON(txn, key(kindBudget, c.Day), &b); err != nil {
		return err
	}
	b.SpentSats = max(0, b.SpentSats+deltaSats)
	return kv.PutJSON(txn, key(kindBudget, c.Day), b)
}

func (s *Service) addTotals(txn *kv.Txn, fn func(*totals)) error {
	var t totals
	if _, err := kv.GetJSON(txn, key(kindTotals), &t); err != nil {
		return err
	}
	fn(&t)
	return kv.PutJSON(txn, key(kindTotals), t)
}
