package web

import (
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/mintdir/resource"
)

func rtt(ms int) *int { return &ms }

func TestUptimeChart(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	// The API answers newest first.
	pts := []resource.Point{
		{Timestamp: t0.Add(15 * time.Minute), State: "online", OK: true, RTTMs: rtt(120)},
		{Timestamp: t0.Add(10 * time.Minute), State: "offline"},
		{Timestamp: t0.Add(5 * time.Minute), State: "unknown"},
		{Timestamp: t0, State: "degraded", RTTMs: rtt(2500)},
	}
	c := newUptimeChart(pts, "24h", 5*time.Minute)
	if len(c.Bars) != 4 {
		t.Fatalf("%d bars", len(c.Bars))
	}
	wantStates := []string{"degraded", "unknown", "offline", "online"} // oldest on the left
	for i, b := range c.Bars {
		if b.State != wantStates[i] {
			t.Errorf("bar %d: %s, want %s", i, b.State, wantStates[i])
		}
	}
	if c.Bars[0].X != "0" || c.Bars[3].X != "540" || c.Bars[3].W != "180.05" {
		t.Errorf("geometry: %+v", c.Bars)
	}
	if !c.From.Equal(t0) || !c.To.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("from %v to %v", c.From, c.To)
	}
	if c.Bars[3].Title != "Nov 21 10:15 UTC: online, 120 ms" || c.Bars[1].Title != "Nov 21 10:05 UTC: no data" {
		t.Errorf("titles: %q, %q", c.Bars[3].Title, c.Bars[1].Title)
	}
	if !strings.Contains(c.Desc, "4 buckets of 5 min") || !strings.Contains(c.Desc, "1 online, 1 degraded, 1 offline, 1 no data") {
		t.Errorf("desc: %s", c.Desc)
	}
	if empty := newUptimeChart(nil, "7d", time.Hour); len(empty.Bars) != 0 || empty.Desc != "No data yet." || empty.Title != "Uptime over the last 7 days" {
		t.Errorf("empty: %+v", empty)
	}
}

func TestRTTChart(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	var pts []resource.Point
	// oldest first: 100, 200, gap, 300, gap, 400 (a lone bucket is a dot)
	for i, ms := range []*int{rtt(100), rtt(200), nil, rtt(300), nil, rtt(400)} {
		pts = append([]resource.Point{{Timestamp: t0.Add(time.Duration(i) * time.Hour), State: "online", RTTMs: ms}}, pts...)
	}
	c := newRTTChart(pts, "7d", time.Hour)
	if c.MaxMs != 500 {
		t.Errorf("top of the scale %d, want 500", c.MaxMs)
	}
	if len(c.Paths) != 1 || !strings.HasPrefix(c.Paths[0], "M60 84L180 64") {
		t.Errorf("paths: %q", c.Paths)
	}
	if len(c.Dots) != 2 || c.Dots[0] != (dot{"420", "44"}) || c.Dots[1] != (dot{"660", "24"}) {
		t.Errorf("dots: %+v", c.Dots)
	}
	if !strings.Contains(c.Desc, "average 250 ms, highest 400 ms, over 4 buckets") {
		t.Errorf("desc: %s", c.Desc)
	}
	if e := newRTTChart([]resource.Point{{Timestamp: t0, State: "offline"}}, "24h", 5*time.Minute); !e.Empty {
		t.Errorf("a window without successful checks: %+v", e)
	}
}

func TestNiceCeil(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{0: 1, 1: 1, 7: 10, 11: 20, 180: 200, 201: 500, 999: 1000, 2500: 5000} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", in, got, want)
		}
	}
}

// A mint checked only lately gets a chart of the time since its first
// check, not a window of "no data" with a sliver; one never checked keeps
// the window.
func TestChartsOfANewMint(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	series := func(checked int) []resource.Point {
		var pts []resource.Point // newest first
		for i := 287; i >= 0; i-- {
			p := resource.Point{Timestamp: t0.Add(time.Duration(i) * 5 * time.Minute), State: "unknown"}
			if i >= 288-checked {
				p.State, p.OK, p.RTTMs = "online", true, rtt(40+i%3)
			}
			pts = append(pts, p)
		}
		return pts
	}
	for _, c := range []struct{ checked, bars int }{{1, 1}, {3, 3}, {30, 30}, {288, 288}, {0, 288}} {
		u, r := newUptimeChart(series(c.checked), "24h", 5*time.Minute), newRTTChart(series(c.checked), "24h", 5*time.Minute)
		if len(u.Bars) != c.bars {
			t.Errorf("checked for %d buckets: %d bars, want %d", c.checked, len(u.Bars), c.bars)
		}
		whole := c.bars == 288
		if wantU := map[bool]string{true: "Uptime over the last 24 hours", false: "Uptime since the first check"}[whole]; u.Title != wantU {
			t.Errorf("checked for %d buckets: %q", c.checked, u.Title)
		}
		if wantR := map[bool]string{true: "Response time over the last 24 hours", false: "Response time since the first check"}[whole]; r.Title != wantR {
			t.Errorf("checked for %d buckets: %q", c.checked, r.Title)
		}
		if c.checked == 0 {
			if !r.Empty {
				t.Errorf("never checked: a response chart %+v", r)
			}
			continue
		}
		if c.checked == 1 {
			if len(r.Dots) != 1 {
				t.Errorf("checked once: %+v, want one dot", r)
			}
			continue
		}
		if !r.From.Equal(u.From) || len(r.Paths) != 1 {
			t.Errorf("checked for %d buckets: the response chart from %v (uptime %v), %d lines", c.checked, r.From, u.From, len(r.Paths))
		}
	}
}
