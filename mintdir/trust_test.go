package mintdir

import (
	"testing"
	"time"
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
