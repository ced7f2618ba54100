package main

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// reader is one relay the read-path scenario measures: started on a data dir
// it has ingested the events into itself.
type reader struct {
	name    string
	start   func(dir string, env ...string) (*server, error)
	earlier bool // outpost at an earlier revision: compared on fewer figures
	foreign bool // not built here (strfry): no pprof endpoint to profile

	dir         string // holds the events, as this relay stored them
	ingest      ingestResult
	afterIngest mem // a second after the last note
	settled     mem // Settle later, the relay idle
	disk        int64
	lat, tput   map[string][]loadResult // by query shape
	afterLoad   []mem
}

// A query shape of the read-path scenario: all notes of a kind, newest
// first, and one author's notes.
type shape struct{ name, label, filter string }

func readShapes(author string) []shape {
	return []shape{
		{"kinds", `{"kinds":[1],"limit":500}`, `{"kinds":[1],"limit":500}`},
		{"author", `{"authors":[X],"limit":100}`, `{"authors":["` + author + `"],"limit":100}`},
	}
}

// expected is how many events a shape returns from ReadEvents notes by
// readAuthors authors.
func (b *bench) expected(s shape) int {
	if s.name == "kinds" {
		return min(500, b.ReadEvents)
	}
	return min(100, b.ReadEvents/readAuthors)
}

const readAuthors = 1000

// readers lists the relays the scenario compares: outpost, bare khatru on
// eventstore's badger backend (the baseline), strfry when -strfry names a
// binary, and outpost before this work when it was built.
func (b *bench) readers() []*reader {
	outpost := func(bin string) func(string, ...string) (*server, error) {
		return func(dir string, env ...string) (*server, error) {
			return startServer(bin, nil, append(append(outpostEnv(dir), limitsLifted...), env...)...)
		}
	}
	rs := []*reader{
		{name: "outpost", start: outpost(b.outpost)},
		{name: "bare khatru", start: func(dir string, env ...string) (*server, error) {
			return startServer(b.self, []string{"khatru", "-dir", filepath.Join(dir, "badger")}, env...)
		}},
	}
	if b.strfry != "" {
		rs = append(rs, &reader{name: "strfry", foreign: true, start: func(dir string, _ ...string) (*server, error) {
			return startStrfry(b.strfry, dir)
		}})
	}
	if b.before != "" {
		rs = append(rs, &reader{name: "outpost " + b.beforeRev, earlier: true, start: outpost(b.before)})
	}
	return rs
}

// 8. The read path: each relay ingests the same ReadEvents signed notes
// over 16 connections into an empty data dir, its memory measured a second
// after the last and again once idle for Settle; then, in interleaved rounds on
// a copy of what it stored, REQ latency on one connection and REQs/s from
// 16, for two query shapes, and its memory. Then outpost and bare khatru
// ingest the same notes again inside a 150 MiB memory cgroup (when this
// machine lets the bench make one). Last, outpost alone under a sustained
// REQ load, its memory sampled.
func readScenario(b *bench) ([]row, error) {
	rs := b.readers()
	var author string
	for i, r := range rs {
		r.dir = filepath.Join(b.tmp, fmt.Sprintf("reads-%d", i))
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			return nil, err
		}
		srv, err := r.start(r.dir)
		if err != nil {
			return nil, err
		}
		// The same events for every relay: the seed fixes content, the
		// keys differ (they are generated), the shapes name each run's own author.
		err = runJSON(&r.ingest, b.self, "ingest", "-url", srv.ws(), "-events", fmt.Sprint(b.ReadEvents),
			"-authors", fmt.Sprint(readAuthors), "-spread", "-seed", "7")
		time.Sleep(time.Second)
		r.afterIngest = srv.mem()
		time.Sleep(b.Settle)
		r.settled = srv.mem()
		srv.stop()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		if r.ingest.Rejected > 0 {
			return nil, fmt.Errorf("%s: %d of %d events were refused", r.name, r.ingest.Rejected, r.ingest.Events)
		}
		r.disk = diskUsage(r.dir)
		r.lat, r.tput = map[string][]loadResult{}, map[string][]loadResult{}
		author = r.ingest.Author
	}
	for round := range b.ReadRounds {
		for _, r := range rs {
			if err := b.readRound(r, round); err != nil {
				return nil, fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	rows := b.readRows(rs, author)
	out := b.inContainer("outpost", func(cg *cgroup, dir string) (*server, error) {
		return cg.start(b.outpost, nil, append(outpostEnv(dir), limitsLifted...)...)
	})
	base := b.inContainer("bare khatru", func(cg *cgroup, dir string) (*server, error) {
		return cg.start(b.self, []string{"khatru", "-dir", filepath.Join(dir, "badger")})
	})
	rows = append(rows, b.containerRows(out, base)...)
	if b.Sustain > 0 {
		sustained, err := b.sustainedLoad(rs[0])
		if err != nil {
			return nil, err
		}
		rows = append(rows, sustained...)
	}
	return rows, nil
}

// readRound measures one relay once: latency, then throughput, per shape.
func (b *bench) readRound(r *reader, round int) error {
	dir := r.dir + "-run"
	if err := copyDir(r.dir, dir); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	prof, err := newProfiler(b.profileDir != "" && round == 0 && !r.foreign)
	if err != nil {
		return err
	}
	srv, err := r.start(dir, prof.env()...)
	if err != nil {
		return err
	}
	defer srv.stop()
	for _, s := range readShapes(r.ingest.Author) {
		var lat loadResult
		requests := map[string]int{"kinds": 300, "author": 1000}[s.name]
		if b.smoke {
			requests = 20
		}
		if err := runJSON(&lat, b.self, "reqload", "-url", srv.ws(), "-filter", s.filter, "-conns", "1",
			"-requests", fmt.Sprint(requests), "-expect", fmt.Sprint(b.expected(s))); err != nil {
			return err
		}
		r.lat[s.name] = append(r.lat[s.name], lat)

		var tput loadResult
		profiled := prof.during(b.LoadTime, filepath.Join(b.profileDir, fmt.Sprintf("%s-%s.pprof", strings.ReplaceAll(r.name, " ", "-"), s.name)))
		if err := runJSON(&tput, b.self, "reqload", "-url", srv.ws(), "-filter", s.filter, "-conns", "16",
			"-duration", b.LoadTime.String(), "-expect", fmt.Sprint(b.expected(s))); err != nil {
			return err
		}
		if err := <-profiled; err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		r.tput[s.name] = append(r.tput[s.name], tput)
	}
	r.afterLoad = append(r.afterLoad, srv.mem())
	return nil
}

// readRows reports outpost against bare khatru with the targets of issue
// 16, against strfry when it ran, and against itself before.
func (b *bench) readRows(rs []*reader, author string) []row {
	rows := b.versus(rs[0], rs[1], author, !b.smoke)
	for _, r := range rs[2:] {
		if r.earlier {
			rows = append(rows, b.sinceRows(rs[0], r, author)...)
		} else {
			rows = append(rows, b.versus(rs[0], r, author, false)...)
		}
	}
	return rows
}

func perSec(r loadResult) float64 { return r.PerSec }
func p50(r loadResult) float64    { return r.P50ms }
func p99(r loadResult) float64    { return r.P99ms }

func memText(m mem) string {
	return fmt.Sprintf("%s (%s anonymous + %s file)", mb(m.RSS), mb(m.Anon), mb(m.File))
}

// versus compares outpost with another relay on every figure, with issue
// 16's targets when targets.
func (b *bench) versus(out, base *reader, author string, targets bool) []row {
	var rows []row
	vs := fmt.Sprintf(" (%s)", base.name)
	for _, s := range readShapes(author) {
		speedup := map[string]float64{"kinds": 3, "author": 2.5}[s.name]
		for _, q := range []struct {
			label string
			f     func(loadResult) float64
		}{{"p50", p50}, {"p99", p99}} {
			v, bv := median(out.lat[s.name], q.f), median(base.lat[s.name], q.f)
			rw := row{measure: fmt.Sprintf("REQ %s, %s (1 connection)", s.label, q.label), value: msText(v), baseline: msText(bv) + vs, ratio: v / bv}
			if targets {
				rw.target, rw.holds = fmt.Sprintf("≤ 1/%.1f×", speedup), ptr(v*speedup <= bv)
			}
			rows = append(rows, rw)
		}
		v, bv := median(out.tput[s.name], perSec), median(base.tput[s.name], perSec)
		rw := row{measure: fmt.Sprintf("REQs/s from 16 connections, %s", s.label), value: fmt.Sprintf("%.0f", v), baseline: fmt.Sprintf("%.0f", bv) + vs, ratio: v / bv}
		if targets {
			rw.target, rw.holds = "≥ 1.8×", ptr(v >= 1.8*bv)
		}
		rows = append(rows, rw)
		v, bv = median(out.tput[s.name], p99), median(base.tput[s.name], p99)
		rows = append(rows, row{measure: fmt.Sprintf("REQ %s p99 under that load", s.label), value: msText(v), baseline: msText(bv) + vs, ratio: v / bv})
	}
	n := b.ReadEvents
	return append(rows,
		row{measure: fmt.Sprintf("EVENTs/s accepted, %d notes from 16 connections", n), value: fmt.Sprintf("%.0f", out.ingest.PerSec),
			baseline: fmt.Sprintf("%.0f", base.ingest.PerSec) + vs, ratio: out.ingest.PerSec / base.ingest.PerSec},
		memRow(fmt.Sprintf("RSS after ingesting %d notes", n), out.afterIngest, base.afterIngest, base.name, targets),
		memRow(fmt.Sprintf("RSS %s after ingesting %d notes, idle", b.Settle, n), out.settled, base.settled, base.name, targets),
		memRow(fmt.Sprintf("RSS after the REQ load, restarted on %d notes", n), maxMem(out.afterLoad), maxMem(base.afterLoad), base.name, targets),
		row{measure: fmt.Sprintf("disk for %d notes", n), value: mb(out.disk), baseline: mb(base.disk) + vs, ratio: float64(out.disk) / float64(base.disk)},
	)
}

// sinceRows compares outpost with itself at an earlier revision.
func (b *bench) sinceRows(out, prev *reader, author string) []row {
	var rows []row
	n := b.ReadEvents
	pv := fmt.Sprintf(" (%s)", prev.name)
	for _, s := range readShapes(author) {
		v, pvv := median(out.lat[s.name], p50), median(prev.lat[s.name], p50)
		rows = append(rows, row{measure: fmt.Sprintf("REQ %s, p50", s.label), value: msText(v), baseline: msText(pvv) + pv, ratio: v / pvv})
		v, pvv = median(out.tput[s.name], perSec), median(prev.tput[s.name], perSec)
		rows = append(rows, row{measure: fmt.Sprintf("REQs/s from 16 connections, %s", s.label), value: fmt.Sprintf("%.0f", v), baseline: fmt.Sprintf("%.0f", pvv) + pv, ratio: v / pvv})
	}
	r := out.ingest.PerSec / prev.ingest.PerSec
	rw := row{measure: fmt.Sprintf("EVENTs/s accepted, %d notes", n), value: fmt.Sprintf("%.0f", out.ingest.PerSec),
		baseline: fmt.Sprintf("%.0f", prev.ingest.PerSec) + pv, ratio: r}
	if !b.smoke {
		rw.target, rw.holds = "≥ 0.9×", ptr(r >= 0.9)
	}
	return append(rows, rw,
		row{measure: fmt.Sprintf("RSS after ingesting %d notes", n), value: memText(out.afterIngest), baseline: memText(prev.afterIngest) + pv,
			ratio: float64(out.afterIngest.RSS) / float64(prev.afterIngest.RSS)})
}

// memRow compares two relays' memory; outpost's target is 150 MB in all.
func memRow(measure string, m, base mem, baseName string, target bool) row {
	rw := row{measure: measure, value: memText(m), baseline: memText(base) + " (" + baseName + ")", ratio: float64(m.RSS) / float64(base.RSS)}
	if target {
		rw.target, rw.holds = "≤ 150 MB", ptr(m.RSS <= 150e6)
	}
	return rw
}

func maxMem(ms []mem) mem {
	var m mem
	for _, x := range ms {
		if x.RSS > m.RSS {
			m = x
		}
	}
	return m
}

// sustainedLoad runs both query shapes from 8 connections each against
// outpost for b.Sustain, sampling its memory, and reports whether it stays
// flat (see sustain).
func (b *bench) sustainedLoad(r *reader) ([]row, error) {
	dir := r.dir + "-sustain"
	if err := copyDir(r.dir, dir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := r.start(dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	var loads [][]string
	for _, s := range readShapes(r.ingest.Author) {
		loads = append(loads, []string{"-filter", s.filter, "-conns", "8", "-expect", fmt.Sprint(b.expected(s))})
	}
	run, err := b.sustain(srv, loads)
	if err != nil {
		return nil, err
	}
	return run.rows("REQs from 16 connections", b.smoke), nil
}

// sustained is what a sustained load measured.
type sustained struct {
	d       time.Duration
	every   time.Duration // between samples
	results []loadResult  // one per load
	samples []mem
	warm    mem // the sample taken once the first fifth was over
}

// sustain runs the reqload loads (each its arguments besides -url and
// -duration) against srv at once for b.Sustain, sampling srv's memory every
// sixtieth of it (at most once a second). Flat means the last sample against the
// one taken once the first fifth is over: by then the caches have filled.
func (b *bench) sustain(srv *server, loads [][]string) (sustained, error) {
	run := sustained{d: b.Sustain, every: max(time.Second, b.Sustain/60), results: make([]loadResult, len(loads))}
	errs := make(chan error, len(loads))
	for i, args := range loads {
		go func() {
			errs <- runJSON(&run.results[i], b.self, append([]string{"reqload", "-url", srv.ws(), "-duration", b.Sustain.String()}, args...)...)
		}()
	}
	start := time.Now()
	for time.Since(start) < b.Sustain {
		time.Sleep(run.every)
		m := srv.mem()
		run.samples = append(run.samples, m)
		if run.warm.RSS == 0 && time.Since(start) >= b.Sustain/5 {
			run.warm = m
		}
	}
	var err error
	for range loads {
		err = cmp.Or(err, <-errs)
	}
	return run, err
}

// rows report a sustained load of what (with its REQs/s): RSS at the end
// against the warm sample, with the target of ≤ 1.1× unless smoke, then
// the highest sample.
func (run sustained) rows(what string, smoke bool) []row {
	var perSec float64
	for _, r := range run.results {
		perSec += r.PerSec
	}
	last, top := run.samples[len(run.samples)-1], maxMem(run.samples)
	growth := float64(last.RSS) / float64(run.warm.RSS)
	rw := row{measure: fmt.Sprintf("RSS at the end of %s of %s (%.0f REQs/s)", run.d, what, perSec),
		value: memText(last), baseline: memText(run.warm) + fmt.Sprintf(" (after %s)", (run.d/5).Round(time.Second)), ratio: growth}
	if !smoke {
		rw.target, rw.holds = "≤ 1.1×", ptr(growth <= 1.1)
	}
	return []row{rw, {measure: "highest RSS sampled in that run", value: memText(top), baseline: fmt.Sprintf("%d samples, one every %s", len(run.samples), run.every)}}
}

// diskUsage is the space the files under dir take on disk (sparse files
// count what they hold, not their length).
func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
