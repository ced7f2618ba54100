package mintdir

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Summary holds the figures of a mint's core record. They are recomputed
// after every check and when a review of the mint arrives, so reading a mint
// costs one key.
type Summary struct {
	ComputedAt   time.Time      `json:"computed_at"`
	Uptime24h    *float64       `json:"uptime_24h"`
	Uptime7d     *float64       `json:"uptime_7d"`
	Uptime30d    *float64       `json:"uptime_30d"`
	AvgRTT24h    *int           `json:"avg_rtt_ms_24h"`
	AvgRTT7d     *int           `json:"avg_rtt_ms_7d"`
	Incidents7d  int            `json:"incidents_7d"`
	Incidents30d int            `json:"incidents_30d"`
	Reviews      ReviewSummary  `json:"reviews"`
	Audits       AuditSummary   `json:"audits"`
	OtherAudits  []VantageAudit `json:"other_audits,omitempty"` // the followed monitors' (their kind-38166 audit tags)
	Trust        Trust          `json:"trust"`
}

// AuditSummary is a mint's part in the directory's audits (package audit)
// in the last 30 days: zero while audits are off or never tested it.
type AuditSummary struct {
	Audits30d          int        `json:"audits_30d"`
	SuccessRate30d     *float64   `json:"audit_success_rate_30d"` // 0–1; null without a settled audit
	LastAuditAt        *time.Time `json:"last_audit_at"`
	LastAuditFailureAt *time.Time `json:"last_audit_failure_at"`
	HeldSats           uint64     `json:"audit_held_sats"`
	FailedInARow       int        `json:"failed_in_a_row"` // of the newest settled audits, up to 2
}

// Trust levels.
const (
	LevelHigh    = "high"     // score ≥ 75
	LevelMedium  = "medium"   // ≥ 50
	LevelLow     = "low"      // ≥ 25
	LevelVeryLow = "very_low" // < 25
	LevelUnknown = "unknown"  // less than 24 h of checks
)

// Trust is a mint's trust score with its parts.
type Trust struct {
	Score      int       `json:"score_total"`
	Level      string    `json:"score_level"`
	Breakdown  Breakdown `json:"breakdown"`
	ComputedAt time.Time `json:"computed_at"`
}

// Breakdown shows each part of the score with its inputs.
type Breakdown struct {
	Uptime    UptimePart    `json:"uptime"`
	Speed     SpeedPart     `json:"speed"`
	Reviews   ReviewsPart   `json:"reviews"`
	Identity  IdentityPart  `json:"identity"`
	Penalties PenaltiesPart `json:"penalties"`
	Audits    AuditsPart    `json:"audits"`
}

// AuditsPart: −25 × (1 − audit_success_rate_30d), 0 without audits; a
// mint whose newest audit failed, or whose success rate is under 90%, is
// capped below high (74), whatever its uptime. The followed monitors'
// audits count as vantages: the lowest success rate of all is the one
// scored.
type AuditsPart struct {
	Score          float64  `json:"score"`
	Max            float64  `json:"max"`
	Min            float64  `json:"min"`
	Audits30d      int      `json:"audits_30d"`
	SuccessRate30d *float64 `json:"audit_success_rate_30d"`
	NewestFailed   bool     `json:"newest_failed"`
	Capped         bool     `json:"capped"`
	Vantages       int      `json:"vantages"` // monitors whose audits count, this outpost among them
}

// UptimePart: 40 × clamp((uptime_30d − 80) / 20, 0, 1).
type UptimePart struct {
	Score     float64  `json:"score"`
	Max       float64  `json:"max"`
	Uptime30d *float64 `json:"uptime_30d"`
}

// SpeedPart: 25 × clamp((slow_ms − avg_rtt_ms_7d) / (slow_ms − 300), 0, 1).
type SpeedPart struct {
	Score    float64 `json:"score"`
	Max      float64 `json:"max"`
	AvgRTT7d *int    `json:"avg_rtt_ms_7d"`
	SlowMs   int     `json:"slow_ms"`
}

// ReviewsPart: 20 × (average_rating − 1) / 4 × min(1, weighted_count / 5),
// where each review counts by its author's weight in the web of trust (1
// for everyone without one): average_rating is weighted the same way.
type ReviewsPart struct {
	Score         float64  `json:"score"`
	Max           float64  `json:"max"`
	RatedCount    int      `json:"rated_count"`
	WeightedCount float64  `json:"weighted_count"`
	AverageRating *float64 `json:"average_rating"`
}

// IdentityPart: pubkey 3, contact 3, https 2, name 1, description 1.
type IdentityPart struct {
	Score          float64 `json:"score"`
	Max            float64 `json:"max"`
	HasPubkey      bool    `json:"has_pubkey"`
	HasContact     bool    `json:"has_contact"`
	HTTPS          bool    `json:"https"`
	HasName        bool    `json:"has_name"`
	HasDescription bool    `json:"has_description"`
}

// PenaltiesPart: offline −10 (or degraded −3), −2 per incident in 30 days
// (at most −6), pubkey changed in 30 days −5; at least −15.
type PenaltiesPart struct {
	Score            float64 `json:"score"`
	Max              float64 `json:"max"`
	Min              float64 `json:"min"`
	Offline          bool    `json:"offline"`
	Degraded         bool    `json:"degraded"`
	Incidents30d     int     `json:"incidents_30d"`
	PubkeyChanged30d bool    `json:"pubkey_changed_30d"`
}

// Trust score constants.
const (
	maxUptime, maxSpeed, maxReviews, maxIdentity = 40, 25, 20, 10
	minPenalties                                 = -15
	fastRTTMs                                    = 300
	minAudits, auditCap, auditCapRate            = -25, 74, 0.9
)

// auditsPart scores a mint's audits, ours and others' (see AuditsPart).
func auditsPart(a AuditSummary, others []VantageAudit) AuditsPart {
	p := AuditsPart{Min: minAudits, Audits30d: a.Audits30d, SuccessRate30d: a.SuccessRate30d, NewestFailed: a.FailedInARow > 0}
	if a.Audits30d > 0 {
		p.Vantages++
	}
	for _, o := range others {
		p.Vantages++
		p.Audits30d += o.Audits30d
		if o.SuccessRate30d != nil && (p.SuccessRate30d == nil || *o.SuccessRate30d < *p.SuccessRate30d) {
			p.SuccessRate30d = o.SuccessRate30d
		}
	}
	if p.SuccessRate30d != nil {
		p.Score = round1(minAudits * (1 - *p.SuccessRate30d))
		p.Capped = *p.SuccessRate30d < auditCapRate
	}
	p.Capped = p.Capped || p.NewestFailed
	return p
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }
func round1(x float64) float64  { return math.Round(x*10) / 10 }

// scoreTrust computes the trust score from a summary's inputs.
func scoreTrust(m *Mint, info *Info, s *Summary, slow time.Duration, now time.Time) Trust {
	var b Breakdown
	b.Uptime = UptimePart{Max: maxUptime, Uptime30d: s.Uptime30d}
	if s.Uptime30d != nil {
		b.Uptime.Score = round1(maxUptime * clamp01((*s.Uptime30d-80)/20))
	}
	slowMs := int(slow.Milliseconds())
	b.Speed = SpeedPart{Max: maxSpeed, AvgRTT7d: s.AvgRTT7d, SlowMs: slowMs}
	if s.AvgRTT7d != nil && slowMs > fastRTTMs {
		b.Speed.Score = round1(maxSpeed * clamp01(float64(slowMs-*s.AvgRTT7d)/float64(slowMs-fastRTTMs)))
	}
	b.Reviews = reviewsPart(s.Reviews)
	b.Identity = identityPart(m, info)
	b.Penalties = penaltiesPart(m, s, now)
	b.Audits = auditsPart(s.Audits, s.OtherAudits)
	total := b.Uptime.Score + b.Speed.Score + b.Reviews.Score + b.Identity.Score + b.Penalties.Score + b.Audits.Score
	if b.Audits.Capped {
		total = math.Min(total, auditCap)
	}
	t := Trust{Score: int(math.Max(0, math.Min(100, math.Round(total)))), Breakdown: b, ComputedAt: now.UTC()}
	t.Level = trustLevel(m, t.Score, now)
	return t
}

// reviewsPart scores the reviews by their weighted count (the rated count,
// in a summary stored before weights).
func reviewsPart(r ReviewSummary) ReviewsPart {
	p := ReviewsPart{Max: maxReviews, RatedCount: r.RatedCount, AverageRating: r.AverageRating, WeightedCount: float64(r.RatedCount)}
	if r.WeightedCount != nil {
		p.WeightedCount = *r.WeightedCount
	}
	if r.AverageRating != nil {
		p.Score = round1(maxReviews * (*r.AverageRating - 1) / 4 * math.Min(1, p.WeightedCount/5))
	}
	return p
}

// identityPart: 3 points for a pubkey, 3 for a contact, 2 for https, 1 each
// for a name and a description.
func identityPart(m *Mint, info *Info) IdentityPart {
	id := IdentityPart{Max: maxIdentity, HasPubkey: validMintPubkey(m.PubKey), HTTPS: strings.HasPrefix(m.CanonicalURL, "https://")}
	if info != nil {
		id.HasContact, id.HasName, id.HasDescription = len(info.Contact) > 0, info.Name != "", info.Description != ""
	}
	for _, p := range []struct {
		ok     bool
		points float64
	}{{id.HasPubkey, 3}, {id.HasContact, 3}, {id.HTTPS, 2}, {id.HasName, 1}, {id.HasDescription, 1}} {
		if p.ok {
			id.Score += p.points
		}
	}
	return id
}

// penaltiesPart: -10 offline or -3 degraded, -2 per incident in 30 days
// (three at most), -5 for a pubkey changed in 30 days; minPenalties at most.
func penaltiesPart(m *Mint, s *Summary, now time.Time) PenaltiesPart {
	pen := PenaltiesPart{Max: 0, Min: minPenalties, Incidents30d: s.Incidents30d,
		Offline:          m.Status == StatusOffline || m.Status == StatusAbandoned,
		Degraded:         m.Status == StatusDegraded,
		PubkeyChanged30d: m.PubKeyChangedAt != nil && now.Sub(*m.PubKeyChangedAt) < 30*24*time.Hour}
	switch {
	case pen.Offline:
		pen.Score -= 10
	case pen.Degraded:
		pen.Score -= 3
	}
	pen.Score -= 2 * float64(min(s.Incidents30d, 3))
	if pen.PubkeyChanged30d {
		pen.Score -= 5
	}
	pen.Score = math.Max(pen.Score, minPenalties)
	return pen
}

// trustLevel: unknown for a mint checked for less than a day.
func trustLevel(m *Mint, score int, now time.Time) string {
	switch {
	case m.FirstCheckedAt == nil || now.Sub(*m.FirstCheckedAt) < 24*time.Hour:
		return LevelUnknown
	case score >= 75:
		return LevelHigh
	case score >= 50:
		return LevelMedium
	case score >= 25:
		return LevelLow
	}
	return LevelVeryLow
}

// validMintPubkey: a compressed secp256k1 key in hex, as NUT-06 has it.
func validMintPubkey(pk string) bool {
	if len(pk) != 66 || (pk[:2] != "02" && pk[:2] != "03") {
		return false
	}
	for _, c := range pk {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// reviewsEvery bounds how stale a mint's review summary may get between
// saved reviews (which refresh it at once).
const reviewsEvery = time.Hour

// reviewsDue: m's review summary was never read or is an hour old.
func (d *Directory) reviewsDue(m *Mint) bool {
	now := d.now()
	return m.ReviewsReadAt == nil || now.Sub(*m.ReviewsReadAt) >= reviewsEvery || now.Before(*m.ReviewsReadAt)
}

// refreshSummary recomputes a mint's summary and stores it with the mint.
// Reviews are read from the event store only when asked (a review arrived,
// the mint's URLs or pubkey changed) or when the last read is an hour old:
// reading them after every check would cost more than the check.
func (d *Directory) refreshSummary(ctx context.Context, id ID, readReviews bool) error {
	m, err := d.Get(ctx, id.String())
	if err != nil {
		return err
	}
	now := d.now()
	var rs *ReviewSummary
	if readReviews || d.reviewsDue(m) {
		reviews, err := d.reviews(ctx, m)
		if err != nil {
			return err
		}
		sum := summarizeReviews(reviews)
		rs = &sum
	}
	err = d.db.Update(func(txn *kv.Txn) error {
		m, err := getMint(txn, id)
		if err != nil || m == nil || !m.MergedInto.IsZero() {
			return err
		}
		reviews := m.Summary.Reviews
		if rs != nil {
			reviews, m.ReviewsReadAt = *rs, &now
		}
		if err := d.summarize(txn, m, reviews); err != nil {
			return err
		}
		return kv.PutJSON(txn, mintKey(id), m)
	})
	if err == nil {
		d.changed(id)
	}
	return err
}

// summarize fills m.Summary: 24 h from the 5-minute rollups, 7 and 30 days
// from the hourly ones in one scan.
func (d *Directory) summarize(txn *kv.Txn, m *Mint, reviews ReviewSummary) error {
	now := d.now()
	id := m.ID
	s := Summary{ComputedAt: now.UTC(), Reviews: reviews}
	var day, week, month rollup
	to := now.Add(time.Nanosecond)
	if err := scanRollups(txn, id, level5m, now.Add(-24*time.Hour), to, func(_ time.Time, r *rollup) { day.merge(r) }); err != nil {
		return err
	}
	weekStart := now.Add(-Window7d.Dur)
	if err := scanRollups(txn, id, level1h, now.Add(-Window30d.Dur), to, func(start time.Time, r *rollup) {
		month.merge(r)
		if !start.Before(weekStart.Truncate(time.Hour)) {
			week.merge(r)
		}
	}); err != nil {
		return err
	}
	d24, w7, m30 := summarizeRollup(&day), summarizeRollup(&week), summarizeRollup(&month)
	s.Uptime24h, s.Uptime7d, s.Uptime30d = d24.UptimePct, w7.UptimePct, m30.UptimePct
	s.AvgRTT24h, s.AvgRTT7d = d24.AvgRTTMs, w7.AvgRTTMs
	counts, err := countIncidents(txn, id, now.Add(-Window7d.Dur), now.Add(-Window30d.Dur))
	if err != nil {
		return err
	}
	s.Incidents7d, s.Incidents30d = counts[0], counts[1]
	if d.cfg.Audits != nil {
		// A failed read leaves the audits out of this summary, not the
		// rest of it.
		if s.Audits, err = d.cfg.Audits(m.CanonicalURL); err != nil {
			d.log.Warn("mintdir: reading the audits", "mint", m.CanonicalURL, "err", err)
			s.Audits = AuditSummary{}
		}
	}
	others, err := d.vantages(txn, id, now, false)
	if err != nil {
		return err
	}
	for _, v := range others {
		if v.Audit != nil {
			s.OtherAudits = append(s.OtherAudits, *v.Audit)
		}
	}
	var info *Info
	var meta Metadata
	if ok, err := kv.GetJSON(txn, metaKey(id), &meta); err != nil {
		return err
	} else if ok {
		if in, err := ParseInfo(meta.Info); err == nil {
			info = &in
		}
	}
	s.Trust = scoreTrust(m, info, &s, d.cfg.SlowRTT, now)
	m.Summary = s
	return nil
}
