package mintdir

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

func TestTrustFormula(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	old := now.Add(-40 * 24 * time.Hour)
	info := &Info{Name: "n", Description: "d", Contact: []Contact{{"email", "x"}}}
	perfect := &Mint{CanonicalURL: "https://m.example", PubKey: pk1, Status: StatusOnline, FirstCheckedAt: &old}
	s := &Summary{Uptime30d: fp(100), AvgRTT7d: ip(200), Reviews: ReviewSummary{RatedCount: 5, AverageRating: fp(5)}}
	tr := scoreTrust(perfect, info, s, 2*time.Second, now)
	if tr.Score != 95 || tr.Level != LevelHigh || tr.Breakdown.Uptime.Score != 40 || tr.Breakdown.Speed.Score != 25 ||
		tr.Breakdown.Reviews.Score != 20 || tr.Breakdown.Identity.Score != 10 || tr.Breakdown.Penalties.Score != 0 {
		t.Fatalf("perfect mint: %+v", tr)
	}

	// 95% uptime → 30; 1150 ms → 12.5; 2 reviews averaging 4 → 20·0.75·0.4 = 6;
	// http, no contact → identity 5; degraded −3, 2 incidents −4.
	mid := &Mint{CanonicalURL: "http://m.example", PubKey: pk1, Status: StatusDegraded, FirstCheckedAt: &old}
	s = &Summary{Uptime30d: fp(95), AvgRTT7d: ip(1150), Incidents30d: 2, Reviews: ReviewSummary{RatedCount: 2, AverageRating: fp(4)}}
	tr = scoreTrust(mid, &Info{Name: "n", Description: "d"}, s, 2*time.Second, now)
	b := tr.Breakdown
	if b.Uptime.Score != 30 || b.Speed.Score != 12.5 || b.Reviews.Score != 6 || b.Identity.Score != 5 || b.Penalties.Score != -7 || tr.Score != 47 || tr.Level != LevelLow {
		t.Fatalf("middling mint: %d %s %+v", tr.Score, tr.Level, b)
	}

	// Penalties bottom out at −15; the total at 0.
	changed := now.Add(-24 * time.Hour)
	bad := &Mint{CanonicalURL: "http://m.example", Status: StatusOffline, FirstCheckedAt: &old, PubKeyChangedAt: &changed}
	tr = scoreTrust(bad, nil, &Summary{Uptime30d: fp(50), Incidents30d: 9}, 2*time.Second, now)
	if tr.Breakdown.Penalties.Score != -15 || tr.Score != 0 || tr.Level != LevelVeryLow {
		t.Fatalf("bad mint: %+v", tr)
	}

	// Under 24 h of checks: unknown, whatever the score.
	recent := now.Add(-time.Hour)
	perfect.FirstCheckedAt = &recent
	if tr = scoreTrust(perfect, info, &Summary{Uptime30d: fp(100)}, 2*time.Second, now); tr.Level != LevelUnknown {
		t.Fatalf("new mint: %s", tr.Level)
	}
}

// TestTrustAudits: a mint that fails its audits cannot score high,
// whatever its uptime; one that passes them all keeps its score, the audits
// part at its maximum.
func TestTrustAudits(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	old := now.Add(-40 * 24 * time.Hour)
	info := &Info{Name: "n", Description: "d", Contact: []Contact{{"email", "x"}}}
	perfect := &Mint{CanonicalURL: "https://m.example", PubKey: pk1, Status: StatusOnline, FirstCheckedAt: &old}
	s := &Summary{Uptime30d: fp(100), AvgRTT7d: ip(200), Reviews: ReviewSummary{RatedCount: 5, AverageRating: fp(5)},
		Audits: AuditSummary{Audits30d: 20, SuccessRate30d: fp(1)}}
	if tr := scoreTrust(perfect, info, s, 2*time.Second, now); tr.Score != 95 || tr.Level != LevelHigh ||
		tr.Breakdown.Audits.Score != tr.Breakdown.Audits.Max || tr.Breakdown.Audits.Capped {
		t.Fatalf("all audits passed: %d %s %+v", tr.Score, tr.Level, tr.Breakdown.Audits)
	}
	for _, a := range []AuditSummary{
		{Audits30d: 20, SuccessRate30d: fp(0.95), FailedInARow: 1}, // the newest failed
		{Audits30d: 20, SuccessRate30d: fp(0.8)},                   // one in five failed
		{Audits30d: 2, SuccessRate30d: fp(0), FailedInARow: 2},
	} {
		s.Audits = a
		tr := scoreTrust(perfect, info, s, 2*time.Second, now)
		if tr.Level == LevelHigh || !tr.Breakdown.Audits.Capped {
			t.Fatalf("failing audits %+v: %d %s %+v", a, tr.Score, tr.Level, tr.Breakdown.Audits)
		}
	}
	if tr := scoreTrust(perfect, info, s, 2*time.Second, now); tr.Breakdown.Audits.Score != -25 || tr.Score != 70 {
		t.Fatalf("every audit failed: %d %+v", tr.Score, tr.Breakdown.Audits)
	}

	// Another monitor's audits count as a vantage: its lower rate is the
	// one scored, even with none of ours.
	s.Audits = AuditSummary{}
	s.OtherAudits = []VantageAudit{{Audits30d: 10, SuccessRate30d: fp(1)}, {Audits30d: 10, SuccessRate30d: fp(0.5)}}
	tr := scoreTrust(perfect, info, s, 2*time.Second, now)
	if tr.Level == LevelHigh || tr.Breakdown.Audits.Vantages != 2 || *tr.Breakdown.Audits.SuccessRate30d != 0.5 {
		t.Fatalf("others' failing audits: %d %s %+v", tr.Score, tr.Level, tr.Breakdown.Audits)
	}
}

func TestAuditTagOfAMonitor(t *testing.T) {
	now := time.Now()
	ev := &nostr.Event{Kind: KindMintStatus, CreatedAt: nostr.Timestamp(now.Unix()), PubKey: pk1[2:],
		Tags: nostr.Tags{{"d", "https://m.example"}, {"status", "online"}, {"audit", "30d", "12", "0.75"}}}
	_, v, err := parseStatusEvent(ev, now)
	if err != nil || v.Audit == nil || v.Audit.Audits30d != 12 || *v.Audit.SuccessRate30d != 0.75 {
		t.Fatalf("%+v %v", v.Audit, err)
	}
	for _, bad := range []nostr.Tag{{"audit", "7d", "3", "1"}, {"audit", "30d", "-1"}, {"audit", "30d", "x"}} {
		ev.Tags = nostr.Tags{{"d", "https://m.example"}, {"status", "online"}, bad}
		if _, v, _ := parseStatusEvent(ev, now); v.Audit != nil {
			t.Errorf("%v read as %+v", bad, v.Audit)
		}
	}
	ev.Tags = nostr.Tags{{"d", "https://m.example"}, {"status", "online"}, {"audit", "30d", "3", "1.5"}}
	if _, v, _ := parseStatusEvent(ev, now); v.Audit == nil || v.Audit.SuccessRate30d != nil {
		t.Errorf("a rate over 1 read as %+v", v.Audit)
	}
}

func TestViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	m := e.mint(e.submit("http://127.0.0.1:1"))
	day := 24 * time.Hour
	// Six days ago: 14 views by one visitor.
	for range 14 {
		e.dir.CountView(m, "198.51.100.1", "wallet/1")
	}
	if err := e.dir.FlushViews(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(6 * day)
	// Today: 4 views by 3 visitors, two of them flushed.
	e.dir.CountView(m, "198.51.100.1", "wallet/1")
	e.dir.CountView(m, "198.51.100.2", "wallet/1")
	e.dir.FlushViews(e.ctx)
	e.dir.CountView(m, "198.51.100.2", "wallet/1")
	e.dir.CountView(m, "198.51.100.2", "wallet/2")

	v, err := e.dir.Views(e.ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	// The salt changed between the days, so the first visitor counts twice.
	if v.Views24h != 4 || v.Views7d != 18 || v.Views30d != 18 || v.UniqueSessions30d != 4 {
		t.Fatalf("views = %+v", v)
	}
	if v.Velocity != 1.56 { // 4 / (18/7)
		t.Fatalf("velocity = %v", v.Velocity)
	}
	e.dir.FlushViews(e.ctx)
	if again, _ := e.dir.Views(e.ctx, m); again != v {
		t.Fatalf("after flushing: %+v, before %+v", again, v)
	}
	e.clock.Add(8 * day)
	if v, _ = e.dir.Views(e.ctx, m); v.Views7d != 0 || v.Views30d != 18 || v.Velocity != 0 {
		t.Fatalf("a week later: %+v", v)
	}
	if err := e.dir.Prune(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(30 * day)
	e.dir.Prune(e.ctx)
	if v, _ = e.dir.Views(e.ctx, m); v != (Views{}) {
		t.Fatalf("after 44 days: %+v", v)
	}
}

// TestPayoutFailedIncident: a failed audit of a listed mint is an incident
// (over at once, major, with what failed), counted in its incidents; a
// mint the directory does not list is left alone.
func TestPayoutFailedIncident(t *testing.T) {
	e := newEnv(t, Config{})
	m := newFakeMint(t, "Audited", pk1)
	id := e.submit(m.URL)
	e.probe(id)
	at := e.clock.Now()
	if err := e.dir.PayoutFailed(e.ctx, m.URL, at, "failed its audit as payee: no"); err != nil {
		t.Fatal(err)
	}
	if err := e.dir.PayoutFailed(e.ctx, "http://127.0.0.1:1", at, "unlisted"); err != nil {
		t.Fatalf("an unlisted mint: %v", err)
	}
	incs, err := e.dir.Incidents(e.ctx, e.mint(id), time.Time{}, 10)
	if err != nil || len(incs) != 1 || incs[0].Cause != CausePayoutFailed || incs[0].ResolvedAt == nil ||
		incs[0].Severity != SeverityMajor || incs[0].Detail == "" {
		t.Fatalf("incidents: %+v %v", incs, err)
	}
	if n := e.mint(id).Summary.Incidents30d; n != 1 {
		t.Fatalf("incidents_30d %d", n)
	}
}
