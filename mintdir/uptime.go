package mintdir

import (
	"context"
	"math"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Window is a query window: 24h, 7d or 30d.
type Window struct {
	Name string
	Dur  time.Duration
}

// Windows by name.
var (
	Window24h = Window{"24h", 24 * time.Hour}
	Window7d  = Window{"7d", 7 * 24 * time.Hour}
	Window30d = Window{"30d", 30 * 24 * time.Hour}
)

// ParseWindow reads ?window= (default 24h).
func ParseWindow(s string) (Window, error) {
	switch s {
	case "", "24h":
		return Window24h, nil
	case "7d":
		return Window7d, nil
	case "30d":
		return Window30d, nil
	}
	return Window{}, outpost.Errorf(outpost.Invalid, "invalid_window", "window must be 24h, 7d or 30d").With("field", "window")
}

// ParseBucket reads ?bucket= (default 5m for 24h, 1h for 7d and 30d).
func ParseBucket(s string, w Window) (time.Duration, error) {
	switch s {
	case "":
		if w == Window24h {
			return 5 * time.Minute, nil
		}
		return time.Hour, nil
	case "5m":
		return 5 * time.Minute, nil
	case "15m":
		return 15 * time.Minute, nil
	case "1h":
		return time.Hour, nil
	}
	return 0, outpost.Errorf(outpost.Invalid, "invalid_bucket", "bucket must be 5m, 15m or 1h").With("field", "bucket")
}

// levelFor picks the rollup level for a window: 5-minute buckets for 24 h,
// hourly ones for longer windows (at most 720 keys for 30 days).
func levelFor(w Window) byte {
	if w.Dur <= 24*time.Hour {
		return level5m
	}
	return level1h
}

// scanRollups calls fn with each stored bucket of level whose start is in
// [from, to), oldest first. Cost: one key per bucket, whatever the number of
// checks in it. fn must not keep r: it is reused.
func scanRollups(txn *kv.Txn, id ID, level byte, from, to time.Time, fn func(start time.Time, r *rollup)) error {
	prefix := key(kRollup, id[:], []byte{level})
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
	defer it.Close()
	first := from.Truncate(levelSize[level])
	var r rollup
	var buf []byte
	for it.Seek(append(prefix, kv.U64(uint64(first.Unix()))...)); it.Valid(); it.Next() {
		start := time.Unix(int64(u64(it.Item().Key()[len(prefix):])), 0)
		if !start.Before(to) {
			break
		}
		var err error
		if buf, err = it.Item().ValueCopy(buf[:0]); err != nil {
			return err
		}
		r = rollup{}
		if err := r.decodeInto(buf); err != nil {
			return err
		}
		fn(start, &r)
	}
	return nil
}

// Uptime is the uptime summary of a window.
type Uptime struct {
	UptimePct   *float64 // nil without checks
	DowntimeSec int64
	AvgRTTMs    *int
	P95RTTMs    *int
	TotalChecks int64
	OKChecks    int64
}

func summarizeRollup(r *rollup) Uptime {
	u := Uptime{TotalChecks: int64(r.Total), OKChecks: int64(r.OK), DowntimeSec: int64(r.DownMs / 1000)}
	if r.Total > 0 {
		pct := math.Round(float64(r.OK)/float64(r.Total)*10000) / 100
		u.UptimePct = &pct
	}
	if r.OK > 0 {
		avg := int(math.Round(float64(r.RTTSum) / float64(r.OK)))
		u.AvgRTTMs = &avg
		p, _ := r.p95()
		u.P95RTTMs = &p
	}
	return u
}

// Uptime summarises a mint's checks in the window ending now.
func (d *Directory) Uptime(ctx context.Context, m *Mint, w Window) (Uptime, error) {
	now := d.now()
	var total rollup
	err := d.db.View(func(txn *kv.Txn) error {
		return scanRollups(txn, m.ID, levelFor(w), now.Add(-w.Dur), now.Add(time.Nanosecond), func(_ time.Time, r *rollup) { total.merge(r) })
	})
	return summarizeRollup(&total), err
}

// Point is one timeseries bucket.
type Point struct {
	Timestamp time.Time
	State     string // worst status seen: online, degraded, offline; unknown without checks
	OK        bool   // every counted check in the bucket succeeded
	RTTMs     *int   // mean of successful checks
}

// Timeseries returns the window's buckets, newest first, every bucket
// present (unknown when it saw no check). A 15-minute bucket adds up three
// 5-minute rollups; a 5-minute series over 30 days reads 8,640 keys at most.
func (d *Directory) Timeseries(ctx context.Context, m *Mint, w Window, bucket time.Duration) ([]Point, error) {
	now := d.now()
	level := level1h
	if bucket < time.Hour {
		level = level5m
	}
	first := now.Add(-w.Dur).Truncate(bucket)
	n := int(now.Sub(first)/bucket) + 1
	agg := make([]pointAgg, n)
	err := d.db.View(func(txn *kv.Txn) error {
		return scanRollups(txn, m.ID, level, first, now.Add(time.Nanosecond), func(start time.Time, r *rollup) {
			if i := int(start.Sub(first) / bucket); i >= 0 && i < n {
				agg[i].add(r)
			}
		})
	})
	if err != nil {
		return nil, err
	}
	points := make([]Point, n)
	rtts := make([]int, n) // one allocation for every point's RTT
	for i := range agg {
		a := &agg[i]
		p := Point{Timestamp: first.Add(time.Duration(i) * bucket).UTC(), State: a.state(), OK: a.total > 0 && a.ok == a.total}
		if a.total == 0 && a.skipped > 0 {
			p.OK = true // only 429s: up, asking us to slow down
		}
		if a.ok > 0 {
			rtts[i] = int(math.Round(float64(a.rttSum) / float64(a.ok)))
			p.RTTMs = &rtts[i]
		}
		points[n-1-i] = p
	}
	return points, nil
}

// pointAgg is the part of a rollup a timeseries point needs (no histogram).
type pointAgg struct {
	total, ok, skipped, rttSum uint64
	states                     [nStates]uint64
}

func (a *pointAgg) add(r *rollup) {
	a.total += r.Total
	a.ok += r.OK
	a.skipped += r.Skipped
	a.rttSum += r.RTTSum
	for i, n := range r.States {
		a.states[i] += n
	}
}

func (a *pointAgg) state() string {
	r := rollup{States: a.states}
	return r.state()
}
