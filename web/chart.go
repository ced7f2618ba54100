package web

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/mintdir/resource"
)

// Charts are drawn here as SVG from the directory's own timeseries buckets,
// so a browser needs no chart library (nor JavaScript) to show them. The
// geometry is computed here and written out by the mint template, which
// escapes every text. The SVG stretches to its box (preserveAspectRatio
// none); axis labels are HTML beside it, so they stay readable on a phone.

// chartWidth is the width of both charts' coordinate space.
const chartWidth = 720.0

// uptimeChart is a strip of one bar per bucket, coloured by its state.
type uptimeChart struct {
	Title, Desc string
	Bars        []bar
	From, To    time.Time
	Counts      []stateCount // for the legend
}

type bar struct {
	X, W  string
	State string
	Title string
}

type stateCount struct {
	State string
	N     int
}

// rttChart draws the mean response time of each bucket as a line.
type rttChart struct {
	Title, Desc string
	Paths       []string // one per run of buckets with a response time
	Dots        []dot    // buckets with a response time between two without
	Grid        []string // y of the grid lines
	MaxMs       int      // the top of the scale
	From, To    time.Time
	Empty       bool
}

type dot struct{ X, Y string }

const rttHeight, rttTop = 100.0, 4.0

func f2(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// recent takes the API's points (newest first) and returns them oldest
// first, without the buckets from before the mint's first check: a mint
// added a few minutes ago gets a chart of those minutes, not 24 hours of "no
// data" with a sliver at the edge. A mint never checked keeps the whole
// window, all without data. since says whether any were left out, and so
// whether the chart still spans the whole window.
func recent(points []resource.Point) (pts []resource.Point, since bool) {
	n := len(points)
	for n > 0 && points[n-1].State == "unknown" && points[n-1].RTTMs == nil {
		n--
	}
	if n == 0 {
		n = len(points)
	}
	return oldestFirst(points[:n]), n < len(points)
}

// chartTitle names what a chart spans: the window, or the time since the
// mint's first check.
func chartTitle(what, window string, since bool) string {
	if since {
		return what + " since the first check"
	}
	return what + " over the last " + windowWords(window)
}

// newUptimeChart draws the API's points (newest first) oldest first, left to
// right.
func newUptimeChart(points []resource.Point, window string, bucket time.Duration) uptimeChart {
	pts, since := recent(points)
	c := uptimeChart{Title: chartTitle("Uptime", window, since)}
	if len(pts) == 0 {
		c.Desc = "No data yet."
		return c
	}
	c.From, c.To = pts[0].Timestamp, pts[len(pts)-1].Timestamp.Add(bucket)
	w := chartWidth / float64(len(pts))
	counts := map[string]int{}
	for i, p := range pts {
		counts[p.State]++
		title := p.Timestamp.UTC().Format("Jan 2 15:04 UTC") + ": " + stateWords(p.State)
		if p.RTTMs != nil {
			title += fmt.Sprintf(", %d ms", *p.RTTMs)
		}
		c.Bars = append(c.Bars, bar{X: f2(float64(i) * w), W: f2(w + 0.05), State: p.State, Title: title})
	}
	var parts []string
	for _, s := range []string{"online", "degraded", "offline", "unknown"} {
		if counts[s] > 0 {
			c.Counts = append(c.Counts, stateCount{State: s, N: counts[s]})
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], stateWords(s)))
		}
	}
	c.Desc = fmt.Sprintf("%d buckets of %s from %s to %s: %s.", len(pts), duration(bucket),
		c.From.UTC().Format("Jan 2 15:04"), c.To.UTC().Format("Jan 2 15:04 UTC"), strings.Join(parts, ", "))
	return c
}

func newRTTChart(points []resource.Point, window string, bucket time.Duration) rttChart {
	pts, since := recent(points)
	c := rttChart{Title: chartTitle("Response time", window, since)}
	maxMs, n, sum := 0, 0, 0
	for _, p := range pts {
		if p.RTTMs != nil {
			maxMs, n, sum = max(maxMs, *p.RTTMs), n+1, sum+*p.RTTMs
		}
	}
	if n == 0 {
		c.Empty, c.Desc = true, "No successful checks in this window."
		return c
	}
	c.From, c.To = pts[0].Timestamp, pts[len(pts)-1].Timestamp.Add(bucket)
	c.MaxMs = niceCeil(maxMs)
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		c.Grid = append(c.Grid, f2(rttTop+rttHeight*f))
	}
	w := chartWidth / float64(len(pts))
	x := func(i int) string { return f2((float64(i) + 0.5) * w) }
	y := func(ms int) string { return f2(rttTop + rttHeight*(1-float64(ms)/float64(c.MaxMs))) }
	var run []string
	flush := func(i int) {
		switch len(run) {
		case 0:
		case 1:
			c.Dots = append(c.Dots, dot{X: x(i - 1), Y: y(*pts[i-1].RTTMs)})
		default:
			c.Paths = append(c.Paths, "M"+strings.Join(run, "L"))
		}
		run = run[:0]
	}
	for i, p := range pts {
		if p.RTTMs == nil {
			flush(i)
			continue
		}
		run = append(run, x(i)+" "+y(*p.RTTMs))
	}
	flush(len(pts))
	c.Desc = fmt.Sprintf("Mean response time per %s bucket: average %d ms, highest %d ms, over %s with successful checks.",
		duration(bucket), int(math.Round(float64(sum)/float64(n))), maxMs, count(int64(n), "bucket"))
	return c
}

func oldestFirst(points []resource.Point) []resource.Point {
	out := make([]resource.Point, len(points))
	for i, p := range points {
		out[len(points)-1-i] = p
	}
	return out
}

// niceCeil rounds a chart's top up to 1, 2 or 5 times a power of ten.
func niceCeil(v int) int {
	if v <= 0 {
		return 1
	}
	p := int(math.Pow(10, math.Floor(math.Log10(float64(v)))))
	for _, m := range []int{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func windowWords(w string) string {
	switch w {
	case "7d":
		return "7 days"
	case "30d":
		return "30 days"
	}
	return "24 hours"
}

func stateWords(s string) string {
	if s == "unknown" {
		return "no data"
	}
	return s
}

// auditChart is a strip of one bar per audit of the mint, oldest first,
// coloured by its outcome (as the uptime strip's states: ok online,
// pending degraded, failed offline).
type auditChart struct {
	Desc  string
	Bars  []bar
	OK    int
	Other int
}

var auditStates = map[string]string{"ok": "online", "pending": "degraded", "failed": "offline"}

// newAuditChart draws the API's entries (newest first) oldest first.
func newAuditChart(entries []audit.Entry) auditChart {
	var c auditChart
	if len(entries) == 0 {
		c.Desc = "No audits yet."
		return c
	}
	w := chartWidth / float64(len(entries))
	for i := range entries {
		e := entries[len(entries)-1-i]
		if e.Outcome == "ok" {
			c.OK++
		} else {
			c.Other++
		}
		took := int(e.Ms)
		title := fmt.Sprintf("%s: %s, %d sats as %s, %s", e.At.UTC().Format("Jan 2 15:04 UTC"), e.Outcome, e.AmountSats, e.Role, ms(&took))
		c.Bars = append(c.Bars, bar{X: f2(float64(i) * w), W: f2(w + 0.05), State: auditStates[e.Outcome], Title: title})
	}
	c.Desc = fmt.Sprintf("The newest %d audits: %d paid, %d failed or pending.", len(entries), c.OK, c.Other)
	return c
}
