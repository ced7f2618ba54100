package mintdir

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// Rollups: every check is added, in the same transaction that stores it, to
// the 5-minute and the 1-hour bucket it falls in. Uptime, RTT percentiles and
// timeseries are answered from buckets, so a 30-day query reads at most 720
// hourly keys however many checks there are.
const (
	level5m byte = 0
	level1h byte = 1
)

var levelSize = map[byte]time.Duration{level5m: 5 * time.Minute, level1h: time.Hour}

// Bucket states, worst last; a bucket shows the worst it saw.
const (
	stUnknown = iota
	stOnline
	stDegraded
	stOffline
	nStates
)

var stateNames = [nStates]string{"unknown", "online", "degraded", "offline"}

// RTT histogram: bin i holds RTTs up to 1.1^i ms (about ±5%), bin 0 under
// 1 ms, the last one everything above ~3 minutes.
const (
	histBins  = 128
	histRatio = 1.1
)

func histBin(ms int) int {
	if ms < 1 {
		return 0
	}
	return min(int(math.Ceil(math.Log(float64(ms))/math.Log(histRatio))), histBins-1)
}

func histUpper(bin int) int { return int(math.Round(math.Pow(histRatio, float64(bin)))) }

// rollup aggregates the checks of one bucket.
type rollup struct {
	Total   uint64 // counted checks (429s are not counted)
	OK      uint64
	Skipped uint64 // 429s
	RTTSum  uint64 // ms, of successful checks
	MaxRTT  uint64
	DownMs  uint64 // time attributed to failed checks
	States  [nStates]uint64
	Hist    [histBins]uint32
}

func stateOf(c *Check) int {
	switch c.Status {
	case StatusOnline:
		return stOnline
	case StatusDegraded:
		return stDegraded
	case StatusOffline, StatusAbandoned:
		return stOffline
	}
	if c.Skipped {
		return stUnknown
	}
	return stOffline // a failed check of a mint never seen up
}

// add adds a check; gap is the time since the mint's previous check, which a
// failed check counts as downtime.
func (r *rollup) add(c *Check, gap time.Duration) {
	r.States[stateOf(c)]++
	if c.Skipped {
		r.Skipped++
		return
	}
	r.Total++
	if c.OK {
		r.OK++
		r.RTTSum += uint64(c.RTTMs)
		r.MaxRTT = max(r.MaxRTT, uint64(c.RTTMs))
		r.Hist[histBin(c.RTTMs)]++
	} else {
		r.DownMs += uint64(gap.Milliseconds())
	}
}

// merge adds o into r.
func (r *rollup) merge(o *rollup) {
	r.Total += o.Total
	r.OK += o.OK
	r.Skipped += o.Skipped
	r.RTTSum += o.RTTSum
	r.MaxRTT = max(r.MaxRTT, o.MaxRTT)
	r.DownMs += o.DownMs
	for i := range r.States {
		r.States[i] += o.States[i]
	}
	for i, n := range o.Hist {
		r.Hist[i] += n
	}
}

// state is the worst state seen, "unknown" when the bucket saw no check.
func (r *rollup) state() string {
	for s := nStates - 1; s > stUnknown; s-- {
		if r.States[s] > 0 {
			return stateNames[s]
		}
	}
	return stateNames[stUnknown]
}

// p95 is the 95th percentile RTT of successful checks, to the histogram's
// resolution, never above the largest RTT seen.
func (r *rollup) p95() (int, bool) {
	if r.OK == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(float64(r.OK) * 0.95))
	var seen uint64
	for i, n := range r.Hist {
		seen += uint64(n)
		if seen >= rank {
			return min(histUpper(i), int(r.MaxRTT)), true
		}
	}
	return int(r.MaxRTT), true
}

// Binary encoding: a version byte, then uvarints; the histogram as
// (bin, count) pairs of the bins in use. Small and fast to decode, which is
// what a 720-bucket query needs.
const rollupVersion = 1

func (r *rollup) encode() []byte {
	b := make([]byte, 0, 64)
	b = append(b, rollupVersion)
	for _, v := range []uint64{r.Total, r.OK, r.Skipped, r.RTTSum, r.MaxRTT, r.DownMs} {
		b = binary.AppendUvarint(b, v)
	}
	for _, v := range r.States {
		b = binary.AppendUvarint(b, v)
	}
	used := 0
	for _, n := range r.Hist {
		if n > 0 {
			used++
		}
	}
	b = binary.AppendUvarint(b, uint64(used))
	for i, n := range r.Hist {
		if n > 0 {
			b = binary.AppendUvarint(b, uint64(i))
			b = binary.AppendUvarint(b, uint64(n))
		}
	}
	return b
}

var errBadRollup = errors.New("mintdir: corrupt rollup")

// decodeInto adds the encoded rollup b into r.
func (r *rollup) decodeInto(b []byte) error {
	if len(b) == 0 || b[0] != rollupVersion {
		return errBadRollup
	}
	b = b[1:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	var vals [6 + nStates + 1]uint64
	for i := range vals {
		v, ok := next()
		if !ok {
			return errBadRollup
		}
		vals[i] = v
	}
	r.Total += vals[0]
	r.OK += vals[1]
	r.Skipped += vals[2]
	r.RTTSum += vals[3]
	r.MaxRTT = max(r.MaxRTT, vals[4])
	r.DownMs += vals[5]
	for i := range nStates {
		r.States[i] += vals[6+i]
	}
	for range vals[6+nStates] {
		bin, ok1 := next()
		n, ok2 := next()
		if !ok1 || !ok2 || bin >= histBins {
			return errBadRollup
		}
		r.Hist[bin] += uint32(n)
	}
	return nil
}
