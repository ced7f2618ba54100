package mintdir

import (
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"

	"github.com/outpost-relay/outpost"
)

// feed records checks at the clock's time, one per step.
func (e *env) feed(m *Mint, step time.Duration, checks ...Check) {
	e.t.Helper()
	for _, c := range checks {
		e.clock.Add(step)
		c.At = e.clock.Now()
		if _, err := e.dir.record(m.ID, &c, nil, nil, nil); err != nil {
			e.t.Fatal(err)
		}
	}
}

func ok(rtt int) Check { return Check{OK: true, RTTMs: rtt} }
func bad() Check       { return Check{ErrKind: "timeout"} }
func rateLimited() Check {
	return Check{Skipped: true, ErrKind: "rate_limited", HTTPStatus: 429}
}

func TestUptimeFromRollups(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Settings: Settings{ProbeInterval: 5 * time.Minute}})
	m := e.mint(e.submit("http://127.0.0.1:1"))
	// About 31 days ago: outside every window.
	e.feed(m, 5*time.Minute, bad(), bad())
	e.clock.Add(16 * 24 * time.Hour)
	// About 15 days ago: 10 good checks at 100 ms.
	for range 10 {
		e.feed(m, 5*time.Minute, ok(100))
	}
	e.clock.Add(15 * 24 * time.Hour)
	// Within 24 h: 18 good (RTT 10..180), 2 bad, one 429.
	for i := range 18 {
		e.feed(m, 5*time.Minute, ok(10*(i+1)))
	}
	e.feed(m, 5*time.Minute, bad(), bad(), rateLimited())
	e.clock.Add(time.Minute)

	u24, _ := e.dir.Uptime(e.ctx, m, Window24h)
	if u24.TotalChecks != 20 || u24.OKChecks != 18 || *u24.UptimePct != 90 || *u24.AvgRTTMs != 95 {
		t.Fatalf("24h: %+v uptime %v avg %v", u24, *u24.UptimePct, *u24.AvgRTTMs)
	}
	// p95 of 10..180: the 18th value by rank ceil(17.1) = 180, to the histogram's resolution.
	if p := *u24.P95RTTMs; p < 165 || p > 180 {
		t.Fatalf("p95 = %d, want ≈ 171..180", p)
	}
	// Two failed checks, each counting the 5 minutes before it.
	if u24.DowntimeSec != 600 {
		t.Fatalf("downtime %d s, want 600", u24.DowntimeSec)
	}
	u30, _ := e.dir.Uptime(e.ctx, m, Window30d)
	if u30.TotalChecks != 30 || u30.OKChecks != 28 {
		t.Fatalf("30d: %+v", u30)
	}
	e.clock.Add(31 * 24 * time.Hour)
	if u, _ := e.dir.Uptime(e.ctx, m, Window7d); u.TotalChecks != 0 || u.UptimePct != nil || u.AvgRTTMs != nil || u.P95RTTMs != nil {
		t.Fatalf("an empty window: %+v", u)
	}
}

func TestTimeseries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Settings: Settings{ProbeInterval: 5 * time.Minute}})
	m := e.mint(e.submit("http://127.0.0.1:1"))
	e.clock.Set(e.clock.Now().Truncate(time.Hour)) // buckets line up with the checks
	e.feed(m, 5*time.Minute, ok(100), ok(200), bad(), bad(), bad(), ok(50), rateLimited())
	e.clock.Add(time.Minute)

	pts, err := e.dir.Timeseries(e.ctx, m, Window24h, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 24*12+1 {
		t.Fatalf("%d points for 24h/5m", len(pts))
	}
	// Newest first: the 429 (status unchanged), the good check, three
	// failures (the third makes it offline), two goods.
	want := []struct {
		state string
		ok    bool
		rtt   int
	}{{"online", true, -1}, {"online", true, 50}, {"offline", false, -1}, {"online", false, -1}, {"online", false, -1}, {"online", true, 200}, {"online", true, 100}, {"unknown", false, -1}}
	for i, w := range want {
		p := pts[i]
		rtt := -1
		if p.RTTMs != nil {
			rtt = *p.RTTMs
		}
		if p.State != w.state || p.OK != w.ok || rtt != w.rtt {
			t.Errorf("point %d (%s): %s ok=%v rtt=%d, want %s ok=%v rtt=%d", i, p.Timestamp, p.State, p.OK, rtt, w.state, w.ok, w.rtt)
		}
	}
	if !pts[0].Timestamp.After(pts[1].Timestamp) || pts[0].Timestamp.Minute()%5 != 0 {
		t.Fatalf("timestamps %v, %v", pts[0].Timestamp, pts[1].Timestamp)
	}

	// 15-minute buckets add up three 5-minute ones; hourly ones come from the hourly rollup.
	pts15, _ := e.dir.Timeseries(e.ctx, m, Window24h, 15*time.Minute)
	var sum15 int
	for _, p := range pts15[:4] {
		if p.State == "offline" {
			sum15++
		}
	}
	if len(pts15) != 24*4+1 || sum15 < 1 {
		t.Fatalf("15m: %d points, %d offline", len(pts15), sum15)
	}
	pts1h, _ := e.dir.Timeseries(e.ctx, m, Window30d, time.Hour)
	if len(pts1h) != 30*24+1 || pts1h[0].State != "offline" || pts1h[0].OK || pts1h[0].RTTMs == nil || *pts1h[0].RTTMs != 117 {
		t.Fatalf("30d/1h: %d points, first %+v", len(pts1h), pts1h[0])
	}
}

func TestWindowAndBucketParsing(t *testing.T) {
	t.Parallel()
	if w, _ := ParseWindow(""); w != Window24h {
		t.Error("default window")
	}
	if b, _ := ParseBucket("", Window7d); b != time.Hour {
		t.Error("default bucket for 7d")
	}
	if b, _ := ParseBucket("", Window24h); b != 5*time.Minute {
		t.Error("default bucket for 24h")
	}
	for _, s := range []string{"1d", "24H", "48h", "30"} {
		if _, err := ParseWindow(s); outpost.AsError(err) == nil || outpost.AsError(err).Code != "invalid_window" {
			t.Errorf("window %q: %v", s, err)
		}
	}
	for _, s := range []string{"1m", "10m", "1d"} {
		if _, err := ParseBucket(s, Window24h); outpost.AsError(err) == nil || outpost.AsError(err).Code != "invalid_bucket" {
			t.Errorf("bucket %q: %v", s, err)
		}
	}
}

func TestRollupEncoding(t *testing.T) {
	t.Parallel()
	var r rollup
	for i := range 1000 {
		c := Check{OK: i%10 != 0, RTTMs: i, Status: StatusOnline}
		r.add(&c, time.Minute)
	}
	var back rollup
	if err := back.decodeInto(r.encode()); err != nil || back != r {
		t.Fatalf("round trip: %v", err)
	}
	if err := back.decodeInto([]byte{9, 1, 2}); err == nil {
		t.Fatal("a corrupt rollup decoded")
	}
}

func TestPruneKeepsWhatQueriesRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Settings: Settings{ProbeInterval: time.Hour}})
	m := e.mint(e.submit("http://127.0.0.1:1"))
	e.feed(m, time.Hour, ok(10), ok(10), bad())
	e.clock.Add(40 * 24 * time.Hour)
	e.feed(m, time.Hour, ok(20))
	if err := e.dir.Prune(e.ctx); err != nil {
		t.Fatal(err)
	}
	checks, _ := e.dir.Checks(e.ctx, m, time.Time{}, e.clock.Now().Add(time.Second), 100)
	if len(checks) != 1 || checks[0].RTTMs != 20 {
		t.Fatalf("checks after pruning: %+v", checks)
	}
	// Hourly rollups stay: a long-term record that costs one key per hour.
	var hourly, fine int
	e.st.DB.View(func(txn *kv.Txn) error {
		for _, lv := range []struct {
			level byte
			n     *int
		}{{level1h, &hourly}, {level5m, &fine}} {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: key(kRollup, idBytes(m), []byte{lv.level})})
			for it.Rewind(); it.Valid(); it.Next() {
				*lv.n++
			}
			it.Close()
		}
		return nil
	})
	if hourly != 4 || fine != 1 {
		t.Fatalf("rollups after pruning: %d hourly, %d 5-minute; want 4, 1", hourly, fine)
	}
	if u, _ := e.dir.Uptime(e.ctx, e.mint(m.ID.String()), Window24h); u.TotalChecks != 1 {
		t.Fatalf("uptime after pruning: %+v", u)
	}
}

func idBytes(m *Mint) []byte { id := m.ID; return id[:] }

// A check and the summary that follows from it commit together: a reader
// never sees a mint online after its first check with no uptime yet.
func TestCheckAndSummaryCommitTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	m := e.mint(e.submit(newFakeMint(t, "Atomic", pk1).URL))
	e.feed(m, time.Minute, ok(40))
	m = e.mint(m.ID.String())
	if m.Status != StatusOnline || m.Summary.Uptime24h == nil || *m.Summary.Uptime24h != 100 || m.Summary.AvgRTT24h == nil {
		t.Fatalf("after the check: status %s, summary %+v", m.Status, m.Summary)
	}
	e.feed(m, time.Minute, bad(), bad(), bad())
	if m = e.mint(m.ID.String()); m.Status != StatusOffline || *m.Summary.Uptime24h == 100 || m.Summary.Incidents7d != 1 {
		t.Fatalf("after three failures: status %s, summary %+v", m.Status, m.Summary)
	}
}
