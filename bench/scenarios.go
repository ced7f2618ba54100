package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

type scenario struct {
	name string
	run  func(b *bench) ([]row, error)
}

var scenarios = []scenario{
	{"1. ban policy per event", policyScenario},
	{"2. relay ingest and REQ", ingestScenario},
	{"3. ban status check", statusScenario},
	{"4. full ban list", listScenario},
	{"5. mint directory", mintdirScenario},
	{"6. memory", memoryScenario},
	{"7. relay with slow subscribers", stallScenario},
	{"8. relay reads against bare khatru", readScenario},
	{"9. relay publishing under hostile subscriptions", hostileScenario},
	{"10. the query mix of issue 27 (home feed, profiles, threads, notifications)", mixScenario},
	{"14. banlist at spam-wave scale (issue 52): bulk load, readers, follower, strfry plugin, a burst", banlistScenario},
}

// 1. The policy as a Go benchmark, against verifying the event's signature,
// which every relay does for every event anyway.
func policyScenario(b *bench) ([]row, error) {
	run, err := b.goBench("./policies", "^(BenchmarkPolicy|BenchmarkVerifySignature)$", b.BenchTime, b.Count)
	if err != nil {
		return nil, err
	}
	res := run.Results
	verify := res["BenchmarkVerifySignature"]
	base := fmt.Sprintf("%s (schnorr verify)", ns(verify.NsPerOp))
	var rows []row
	for _, c := range []struct{ name, label, target string }{
		{"banned-author", "banned author", "0 allocs/op"},
		{"clean-ascii-note", "clean 300-char note", "≤ 2 µs/op"},
		{"clean-emoji-note", "clean 300-char note with emoji", "≤ 2 µs/op"},
		{"clean-unicode-note", "clean 300-char note, accented letters", "≤ 2 µs/op"},
		{"blocked-word-note", "note with a blocked word", "≤ 2 µs/op"},
	} {
		r := res["BenchmarkPolicy/"+c.name]
		rw := row{measure: c.label, value: fmt.Sprintf("%s, %.0f allocs/op", ns(r.NsPerOp), r.AllocsPerOp), baseline: base,
			ratio: r.NsPerOp / verify.NsPerOp, target: c.target}
		if c.name == "banned-author" {
			rw.holds = ptr(r.AllocsPerOp == 0)
		} else {
			rw.holds = ptr(r.NsPerOp <= 2000)
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

// 2. EVENTs/s and REQ latency with the ban list loaded and the relay's
// limits checked (lifted so they never refuse), against the same relay
// with an empty ban list and the limits off; and the relay as it was
// before its own websocket loop. Runs alternate to share any drift.
func ingestScenario(b *bench) ([]row, error) {
	type variant struct {
		name, bin string
		env       []string
		empty     bool // on an empty data dir rather than a copy of the seeded one
		ing       []ingestResult
		reqs      []reqResult
	}
	vs := []*variant{{name: "banlist", bin: b.outpost, env: limitsLifted}, {name: "empty", bin: b.outpost, env: limitsOff, empty: true}}
	if b.previous != "" {
		vs = append(vs, &variant{name: "previous", bin: b.previous})
	}
	for round := range b.Rounds {
		for _, v := range vs {
			dir := filepath.Join(b.tmp, fmt.Sprintf("ingest-%d-%s", round, v.name))
			prepare := b.copySeeded
			if v.empty {
				prepare = func(dir string) error { return os.MkdirAll(dir, 0o700) }
			}
			if err := prepare(dir); err != nil {
				return nil, err
			}
			srv, err := startServer(v.bin, nil, append(outpostEnv(dir), v.env...)...)
			if err != nil {
				return nil, err
			}
			var ing ingestResult
			err = runJSON(&ing, b.self, "ingest", "-url", srv.ws(), "-events", fmt.Sprint(b.IngestEvents), "-seed", fmt.Sprint(round))
			var rq reqResult
			if err == nil {
				err = runJSON(&rq, b.self, "req", "-url", srv.ws(), "-limit", "500", "-rounds", fmt.Sprint(max(5, 10*b.Rounds)))
			}
			srv.stop()
			os.RemoveAll(dir)
			if err != nil {
				return nil, err
			}
			if ing.Rejected > 0 {
				return nil, fmt.Errorf("%s: %d of %d events were refused", filepath.Base(v.bin), ing.Rejected, ing.Events)
			}
			v.ing, v.reqs = append(v.ing, ing), append(v.reqs, rq)
		}
	}
	perSec := func(r ingestResult) float64 { return r.PerSec }
	p50 := func(r reqResult) float64 { return r.P50ms }
	p99 := func(r reqResult) float64 { return r.P99ms }
	w, wo := median(vs[0].ing, perSec), median(vs[1].ing, perSec)
	rows := []row{
		{measure: fmt.Sprintf("EVENTs/s accepted (%d bans, %d words loaded, limits checked)", b.Bans, b.Words), value: fmt.Sprintf("%.0f", w),
			baseline: fmt.Sprintf("%.0f (empty ban list, no limits)", wo), ratio: w / wo, target: "≥ 0.9×", holds: ptr(w/wo >= 0.9)},
		{measure: "REQ of 500 events, p50", value: msText(median(vs[0].reqs, p50)), baseline: msText(median(vs[1].reqs, p50)) + " (empty ban list)",
			ratio: median(vs[0].reqs, p50) / median(vs[1].reqs, p50)},
		{measure: "REQ of 500 events, p99", value: msText(median(vs[0].reqs, p99)), baseline: msText(median(vs[1].reqs, p99)) + " (empty ban list)",
			ratio: median(vs[0].reqs, p99) / median(vs[1].reqs, p99)},
	}
	if len(vs) == 3 {
		prev := fmt.Sprintf(" (previous relay, %s)", b.prevRev)
		pw := median(vs[2].ing, perSec)
		rows = append(rows,
			row{measure: "EVENTs/s accepted", value: fmt.Sprintf("%.0f", w), baseline: fmt.Sprintf("%.0f", pw) + prev, ratio: w / pw},
			row{measure: "REQ of 500 events, p50", value: msText(median(vs[0].reqs, p50)), baseline: msText(median(vs[2].reqs, p50)) + prev,
				ratio: median(vs[0].reqs, p50) / median(vs[2].reqs, p50)},
			row{measure: "REQ of 500 events, p99", value: msText(median(vs[0].reqs, p99)), baseline: msText(median(vs[2].reqs, p99)) + prev,
				ratio: median(vs[0].reqs, p99) / median(vs[2].reqs, p99)})
	}
	return rows, nil
}

func msText(v float64) string { return fmt.Sprintf("%.2f ms", v) }

// onSeededCopy starts bin with env on a copy of the seeded store (dir
// name), runs this program's mode args(srv) against it, decodes its JSON
// into res, and returns the server's peak RSS.
func (b *bench) onSeededCopy(name, bin string, env []string, res any, args func(*server) []string) (int64, error) {
	dir := filepath.Join(b.tmp, name)
	if err := b.copySeeded(dir); err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(bin, nil, append(outpostEnv(dir), env...)...)
	if err != nil {
		return 0, err
	}
	defer srv.stop()
	err = runJSON(res, b.self, args(srv)...)
	_, peak := srv.memory()
	return peak, err
}

// 7. Publishers' OK latency while one subscriber to everything reads
// nothing and another reads 2 KB/s, against the same relay with no slow
// subscriber; and the previous relay under the same two.
func stallScenario(b *bench) ([]row, error) {
	run := func(bin string, env []string, slow bool) (res stallResult, peak int64, err error) {
		peak, err = b.onSeededCopy("stall", bin, env, &res, func(srv *server) []string {
			return []string{"stall", "-url", srv.ws(), "-events", fmt.Sprint(b.StallEvents), fmt.Sprint("-slow=", slow), "-silence", b.HangUpWait.String()}
		})
		return res, peak, err
	}
	with, peakWith, err := run(b.outpost, limitsLifted, true)
	if err != nil {
		return nil, err
	}
	without, peakWithout, err := run(b.outpost, limitsLifted, false)
	if err != nil {
		return nil, err
	}
	dropped := row{measure: "the stalled subscriber was dropped", value: yesNo(with.Dropped), target: "yes", holds: ptr(with.Dropped)}
	base := " (no slow subscriber)"
	rows := []row{
		{measure: fmt.Sprintf("OK latency p50, %d events from 4 connections", b.StallEvents), value: msText(with.P50ms), baseline: msText(without.P50ms) + base, ratio: with.P50ms / without.P50ms},
		{measure: "OK latency p99", value: msText(with.P99ms), baseline: msText(without.P99ms) + base, ratio: with.P99ms / without.P99ms,
			target: "< 1 s", holds: ptr(with.P99ms < 1000)},
		{measure: "slowest OK", value: msText(with.MaxMs), baseline: msText(without.MaxMs) + base, ratio: with.MaxMs / without.MaxMs},
		{measure: "OKs slower than 1 s or missing", value: fmt.Sprint(with.Over1s), baseline: fmt.Sprint(without.Over1s) + base},
		dropped,
		{measure: "peak RSS of outpost", value: mb(peakWith), baseline: mb(peakWithout) + base, ratio: float64(peakWith) / float64(peakWithout)},
	}
	if b.previous != "" {
		prev, _, err := run(b.previous, nil, true)
		if err != nil {
			return nil, err
		}
		pb := fmt.Sprintf(" (previous relay, %s, same slow subscribers)", b.prevRev)
		rows = append(rows,
			row{measure: "OK latency p99", value: msText(with.P99ms), baseline: msText(prev.P99ms) + pb, ratio: with.P99ms / prev.P99ms},
			row{measure: "slowest OK", value: msText(with.MaxMs), baseline: msText(prev.MaxMs) + pb, ratio: with.MaxMs / prev.MaxMs},
			row{measure: "OKs slower than 1 s or missing", value: fmt.Sprint(with.Over1s), baseline: fmt.Sprint(prev.Over1s) + pb},
			row{measure: "publishing took", value: fmt.Sprintf("%.1f s", with.Seconds), baseline: fmt.Sprintf("%.1f s", prev.Seconds) + pb, ratio: with.Seconds / prev.Seconds})
	}
	return rows, nil
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// withSeeded runs fn against an outpost on a copy of the seeded data dir.
func withSeeded(b *bench, name string, fn func(srv *server) ([]row, error)) ([]row, error) {
	dir := filepath.Join(b.tmp, name)
	if err := b.copySeeded(dir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(b.outpost, nil, outpostEnv(dir)...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	return fn(srv)
}

// withBare runs fn against the bare net/http server serving body (nil: a ban status).
func withBare(b *bench, body []byte, fn func(bare *server) error) error {
	var args []string
	if body != nil {
		f := filepath.Join(b.tmp, "bare-body")
		if err := os.WriteFile(f, body, 0o600); err != nil {
			return err
		}
		args = []string{"-body", f}
	}
	bare, err := startServer(b.self, append([]string{"bare"}, args...))
	if err != nil {
		return err
	}
	defer bare.stop()
	return fn(bare)
}

const wrkConns = 64

// 3. GET /banlist/blocked/pubkeys/{pk} against a bare handler returning a
// constant body, same load tool, same connections.
func statusScenario(b *bench) ([]row, error) {
	return withSeeded(b, "status", func(srv *server) ([]row, error) {
		out, err := runWrk(srv.url+"/banlist/blocked/pubkeys/"+b.banned, wrkConns, b.Wrk)
		if err != nil {
			return nil, err
		}
		if out.Non2xx > 0 {
			return nil, fmt.Errorf("%d non-2xx answers", out.Non2xx)
		}
		var base wrkResult
		err = withBare(b, nil, func(bare *server) (err error) {
			base, err = runWrk(bare.url+"/x", wrkConns, b.Wrk)
			return err
		})
		if err != nil {
			return nil, err
		}
		return []row{
			{measure: "req/s", value: fmt.Sprintf("%.0f", out.ReqPerSec), baseline: fmt.Sprintf("%.0f (bare net/http)", base.ReqPerSec),
				ratio: out.ReqPerSec / base.ReqPerSec, target: "≥ 0.5×", holds: ptr(out.ReqPerSec/base.ReqPerSec >= 0.5)},
			{measure: "p99 latency", value: out.P99.String(), baseline: base.P99.String() + " (bare net/http)", ratio: float64(out.P99) / float64(base.P99)},
		}, nil
	})
}

// 4. The whole list, with and without If-None-Match, against a bare handler
// serving the very same bytes (and its own 304): a cached encoding should
// cost no more than serving bytes from memory.
func listScenario(b *bench) ([]row, error) {
	return withSeeded(b, "list", func(srv *server) ([]row, error) {
		url := srv.url + "/banlist/blocked/pubkeys"
		body, etag, err := fetch(url)
		if err != nil {
			return nil, err
		}
		gz, _, err := fetch(url, "Accept-Encoding", "gzip")
		if err != nil {
			return nil, err
		}
		full, err := runWrk(url, 8, b.Wrk)
		if err != nil {
			return nil, err
		}
		notMod, err := runWrk(url, wrkConns, b.Wrk, "If-None-Match", etag)
		if err != nil {
			return nil, err
		}
		var baseFull, baseNotMod wrkResult
		err = withBare(b, body, func(bare *server) (err error) {
			if baseFull, err = runWrk(bare.url+"/x", 8, b.Wrk); err != nil {
				return err
			}
			baseNotMod, err = runWrk(bare.url+"/x", wrkConns, b.Wrk, "If-None-Match", `"bare"`)
			return err
		})
		if err != nil {
			return nil, err
		}
		size := fmt.Sprintf("%.1f MB, %.1f MB gzipped", float64(len(body))/1e6, float64(len(gz))/1e6)
		return []row{
			{measure: fmt.Sprintf("200, full list of %d bans (%s), req/s", b.Bans, size), value: fmt.Sprintf("%.1f", full.ReqPerSec),
				baseline: fmt.Sprintf("%.1f (bare, same bytes)", baseFull.ReqPerSec), ratio: full.ReqPerSec / baseFull.ReqPerSec},
			{measure: "304 with If-None-Match, req/s", value: fmt.Sprintf("%.0f", notMod.ReqPerSec),
				baseline: fmt.Sprintf("%.0f (bare 304)", baseNotMod.ReqPerSec), ratio: notMod.ReqPerSec / baseNotMod.ReqPerSec},
			{measure: "304 with If-None-Match, p99", value: notMod.P99.String(), baseline: baseNotMod.P99.String() + " (bare 304)",
				ratio: float64(notMod.P99) / float64(baseNotMod.P99)},
		}, nil
	})
}

// 5. The 30-day queries with 100,000 checks against the same queries with
// 1,000, and a probe cycle over 1,000 loopback mints against fetching the
// same documents with plain net/http (fewer of each in a smoke run).
func mintdirScenario(b *bench) ([]row, error) {
	run, err := b.goBench("./mintdir", "^(BenchmarkUptime30d|BenchmarkTimeseries30d)$", b.BenchTime, b.Count)
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, q := range []struct{ name, label string }{{"BenchmarkUptime30d", "30-day uptime summary"}, {"BenchmarkTimeseries30d", "30-day timeseries (1h buckets)"}} {
		small, big, err := fewestAndMostChecks(run, q.name)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{measure: fmt.Sprintf("%s with %s checks", q.label, thousands(big.n)), value: ns(big.NsPerOp),
			baseline: fmt.Sprintf("%s (%s checks)", ns(small.NsPerOp), thousands(small.n)),
			ratio:    big.NsPerOp / small.NsPerOp, target: "≤ 2×", holds: ptr(big.NsPerOp <= 2*small.NsPerOp)})
	}
	cycles := "3x"
	if b.Count == 1 {
		cycles = "1x"
	}
	probeRun, err := b.goBench("./mintdir", "^BenchmarkProbeCycle$", cycles, 1)
	if err != nil {
		return nil, err
	}
	fetchRun, err := b.goBench("./mintdir", "^BenchmarkFetchCycle$", cycles, 1)
	if err != nil {
		return nil, err
	}
	p, f := probeRun.Results["BenchmarkProbeCycle"], fetchRun.Results["BenchmarkFetchCycle"]
	sec := func(v float64) string { return fmt.Sprintf("%.3f s", v) }
	return append(rows,
		row{measure: fmt.Sprintf("probe cycle over %s loopback mints, wall", thousands(int(p.Metrics["mints"]))), value: sec(p.NsPerOp / 1e9),
			baseline: sec(f.NsPerOp/1e9) + " (plain fetch)", ratio: p.NsPerOp / f.NsPerOp},
		row{measure: "probe cycle, CPU (mints served in-process)", value: sec(p.Metrics["cpu-s/cycle"]), baseline: sec(f.Metrics["cpu-s/cycle"]) + " (plain fetch)",
			ratio: p.Metrics["cpu-s/cycle"] / f.Metrics["cpu-s/cycle"]},
		row{measure: "probe cycle, allocated per cycle", value: mb(int64(p.BytesPerOp)), baseline: mb(int64(f.BytesPerOp)) + " (plain fetch)", ratio: p.BytesPerOp / f.BytesPerOp},
		row{measure: "peak RSS of the benchmark process", value: mb(probeRun.PeakRSS), baseline: mb(fetchRun.PeakRSS) + " (plain fetch)",
			ratio: float64(probeRun.PeakRSS) / float64(fetchRun.PeakRSS)},
	), nil
}

// sized is a benchmark's result with the number of checks it ran with.
type sized struct {
	goBench
	n int
}

// fewestAndMostChecks picks name's sub-benchmarks (name/checks=N) with the
// fewest and the most checks.
func fewestAndMostChecks(run benchRun, name string) (small, big sized, err error) {
	var all []sized
	for k, r := range run.Results {
		if n, err := strconv.Atoi(strings.TrimPrefix(k, name+"/checks=")); err == nil && strings.HasPrefix(k, name+"/") {
			all = append(all, sized{r, n})
		}
	}
	if len(all) < 2 {
		return small, big, fmt.Errorf("%s: want results for two numbers of checks, got %d", name, len(all))
	}
	slices.SortFunc(all, func(a, b sized) int { return a.n - b.n })
	return all[0], all[len(all)-1], nil
}

// thousands writes n with thousands separated by commas.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// 6. Peak RSS holding the seeded bans and words plus many stored events,
// against the same binary on an empty data dir.
func memoryScenario(b *bench) ([]row, error) {
	dir := filepath.Join(b.tmp, "memory")
	if err := b.copySeeded(dir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var s seeded
	if err := runJSON(&s, b.self, "seed", "-dir", dir, "-events", fmt.Sprint(b.Events), "-mints", fmt.Sprint(b.Mints)); err != nil {
		return nil, err
	}
	peak := func(dataDir string) (int64, error) {
		// The seeded mints are on loopback ports nobody serves: they are
		// probed, and fail, as mints do.
		srv, err := startServer(b.outpost, nil, append(outpostEnv(dataDir), "OUTPOST_PROBE_ALLOW_PRIVATE=true")...)
		if err != nil {
			return 0, err
		}
		defer srv.stop()
		for _, p := range []string{"/health", "/banlist/blocked/pubkeys", "/banlist/blocked/words", "/mintdir/mints?limit=500", "/mintdir/stats"} {
			if _, _, err := fetch(srv.url + p); err != nil {
				return 0, err
			}
		}
		time.Sleep(time.Second)
		_, hwm := srv.memory()
		return hwm, nil
	}
	loaded, err := peak(dir)
	if err != nil {
		return nil, err
	}
	empty, err := peak(filepath.Join(b.tmp, "empty"))
	if err != nil {
		return nil, err
	}
	return []row{{measure: fmt.Sprintf("peak RSS with %d bans, %d words, %d mints, %d events", b.Bans, b.Words, b.Mints, b.Events),
		value: mb(loaded), baseline: mb(empty) + " (empty data dir)", ratio: float64(loaded) / float64(empty)}}, nil
}

func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func ns(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f µs", v/1000)
	}
	return fmt.Sprintf("%.0f ns", v)
}

func mb(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }

func ptr[T any](v T) *T { return &v }

// 9. Publishers' OK latency, and outpost's memory, while 20 connections
// from one address each hold 50 subscriptions of 20 filters of 190 "#e" or
// "#p" values (issue 25; each REQ about 255 KB, live events only): against the same relay
// with no such subscriptions, the same load with the filter-value limits
// off (every REQ held, the index alone keeping publishing cheap), and the
// relay before the subscription index.
func hostileScenario(b *bench) ([]row, error) {
	// Events are not rate-limited (1,000 from 64 keys in seconds); the
	// connections per address keep their default (50).
	env := []string{"OUTPOST_RELAY_EVENTS_PER_MINUTE=0", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE=0"}
	unlimited := append([]string{"OUTPOST_RELAY_MAX_FILTER_VALUES=0", "OUTPOST_RELAY_IP_FILTER_VALUES=0"}, env...)
	run := func(bin string, env []string, conns int) (res hostileResult, peak int64, err error) {
		peak, err = b.onSeededCopy("hostile", bin, env, &res, func(srv *server) []string {
			return []string{"hostile", "-url", srv.ws(), "-conns", fmt.Sprint(conns), "-subs", fmt.Sprint(b.HostileSubs),
				"-events", fmt.Sprint(b.HostileEvents), "-pid", fmt.Sprint(srv.cmd.Process.Pid), "-settle", b.Settle.String()}
		})
		return res, peak, err
	}
	// The two the targets compare alternate, rounds times: one run of each
	// is at the mercy of whatever else the machine does.
	var quiets, loadeds []hostileResult
	var quietPeaks, loadedPeaks []int64
	for range b.Rounds {
		q, qp, err := run(b.outpost, env, 0)
		if err != nil {
			return nil, err
		}
		l, lp, err := run(b.outpost, env, b.HostileConns)
		if err != nil {
			return nil, err
		}
		quiets, quietPeaks, loadeds, loadedPeaks = append(quiets, q), append(quietPeaks, qp), append(loadeds, l), append(loadedPeaks, lp)
	}
	quiet, quietPeak := medianHostile(quiets, quietPeaks)
	loaded, loadedPeak := medianHostile(loadeds, loadedPeaks)
	open, openPeak, err := run(b.outpost, unlimited, b.HostileConns)
	if err != nil {
		return nil, err
	}
	base := " (no hostile subscriptions)"
	load := fmt.Sprintf("%d connections × %d REQs", b.HostileConns, b.HostileSubs)
	rows := []row{
		{measure: fmt.Sprintf("hostile REQs held (%s of 20 filters × 190 values)", load), value: heldText(loaded), target: "refused beyond the limits"},
		{measure: fmt.Sprintf("OK latency p50, %d events from 4 connections (median of %d runs, as below)", b.HostileEvents, b.Rounds), value: msText(loaded.P50ms), baseline: msText(quiet.P50ms) + base,
			ratio: loaded.P50ms / quiet.P50ms, target: "≤ 1.5×", holds: ptr(loaded.P50ms <= 1.5*quiet.P50ms)},
		{measure: "OK latency p99", value: msText(loaded.P99ms), baseline: msText(quiet.P99ms) + base,
			ratio: loaded.P99ms / quiet.P99ms, target: "≤ 1.5×", holds: ptr(loaded.P99ms <= 1.5*quiet.P99ms)},
		{measure: "RSS of outpost with the subscriptions held, after publishing", value: memText(loaded.Held), baseline: memText(quiet.Held) + base,
			ratio: float64(loaded.Held.RSS) / float64(quiet.Held.RSS), target: "≤ 224 MiB (memory limit)", holds: ptr(loaded.Held.RSS <= 224<<20)},
		{measure: "peak anonymous memory (Go heap, stacks), sampled every 50 ms", value: mb(loaded.PeakAnon), baseline: mb(quiet.PeakAnon) + base,
			ratio: float64(loaded.PeakAnon) / float64(quiet.PeakAnon), target: "≤ 224 MiB (memory limit)", holds: ptr(loaded.PeakAnon <= 224<<20)},
		{measure: "peak RSS of outpost (anonymous and file-backed)", value: mb(loadedPeak), baseline: mb(quietPeak) + base, ratio: float64(loadedPeak) / float64(quietPeak)},
	}
	off := " (filter-value limits off, every REQ held)"
	rows = append(rows,
		row{measure: "hostile REQs held" + off, value: heldText(open)},
		row{measure: "OK latency p50" + off, value: msText(open.P50ms), baseline: msText(quiet.P50ms) + base, ratio: open.P50ms / quiet.P50ms},
		row{measure: "OK latency p99" + off, value: msText(open.P99ms), baseline: msText(quiet.P99ms) + base, ratio: open.P99ms / quiet.P99ms},
		row{measure: "RSS of outpost with the subscriptions held" + off, value: memText(open.Held), baseline: memText(quiet.Held) + base,
			ratio: float64(open.Held.RSS) / float64(quiet.Held.RSS)},
		row{measure: "peak RSS of outpost" + off, value: mb(openPeak), baseline: mb(quietPeak) + base, ratio: float64(openPeak) / float64(quietPeak)},
	)
	if b.unindexed == "" {
		return rows, nil
	}
	before, beforePeak, err := run(b.unindexed, env, b.HostileConns)
	if err != nil {
		return nil, err
	}
	was := fmt.Sprintf(" (outpost %s, before the index, same load)", b.unindexedRev)
	return append(rows,
		row{measure: "hostile REQs held", value: heldText(loaded), baseline: heldText(before) + was},
		row{measure: "OK latency p50", value: msText(loaded.P50ms), baseline: msText(before.P50ms) + was, ratio: loaded.P50ms / before.P50ms},
		row{measure: "OK latency p99", value: msText(loaded.P99ms), baseline: msText(before.P99ms) + was, ratio: loaded.P99ms / before.P99ms},
		row{measure: "RSS of outpost with the subscriptions held", value: memText(loaded.Held), baseline: memText(before.Held) + was,
			ratio: float64(loaded.Held.RSS) / float64(before.Held.RSS)},
		row{measure: "peak RSS of outpost", value: mb(loadedPeak), baseline: mb(beforePeak) + was, ratio: float64(loadedPeak) / float64(beforePeak)},
	), nil
}

// medianHostile is the median of each figure of several runs (the memory
// held, as a whole, of the run with the median RSS).
func medianHostile(rs []hostileResult, peaks []int64) (hostileResult, int64) {
	byRSS := slices.Clone(rs)
	slices.SortFunc(byRSS, func(a, b hostileResult) int { return cmp.Compare(a.Held.RSS, b.Held.RSS) })
	m := byRSS[len(byRSS)/2]
	m.P50ms = median(rs, func(r hostileResult) float64 { return r.P50ms })
	m.P99ms = median(rs, func(r hostileResult) float64 { return r.P99ms })
	m.PeakAnon = int64(median(rs, func(r hostileResult) float64 { return float64(r.PeakAnon) }))
	return m, int64(median(peaks, func(p int64) float64 { return float64(p) }))
}

// heldText says how many hostile REQs were held, and why the others were not.
func heldText(r hostileResult) string {
	s := fmt.Sprintf("%d of %d", r.Accepted, r.REQs)
	if r.Refused > 0 {
		reason := r.Reason
		if len(reason) > 60 {
			reason = reason[:60] + "…"
		}
		s += fmt.Sprintf(", %d refused (%q)", r.Refused, reason)
	}
	return s
}
