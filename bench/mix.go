package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// mixOptions are the query mix's flags.
type mixOptions struct {
	events int    // events in the store
	seed   uint64 // of the data and of the queries' keys
	cache  string // where the signed events are kept between runs
	keep   string // where the relays' loaded data dirs are kept between runs ("": a temporary dir)
	rounds int
	khatru bool       // bare khatru too (always when there is no strfry)
	ws     bool       // load strfry's bulk over websocket too, not with strfry import
	cold   bool       // drop the OS page cache before each relay's round
	window int        // EVENTs each loading connection keeps in flight (mixpublish -window)
	more   bool       // moreShapes too
	sample *mixSample // of the data, drawn from for moreShapes when more
}

// A query shape of the mix: what clients send when they open a home feed,
// the profiles in it, one author, a thread, their notifications, the
// global feed. Each REQ draws its keys from the data's distribution.
type mixShape struct {
	name, filter string
	draw         func(q *mixDraw) string
}

var mixShapes = []mixShape{
	{"home feed", `{"authors":[300 follows],"kinds":[1,6],"limit":500}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"authors": q.follows(), "kinds": []int{1, 6}, "limit": 500})
	}},
	{"profiles", `{"kinds":[0],"authors":[300]}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"kinds": []int{0}, "authors": q.follows()})
	}},
	{"one author", `{"authors":[1],"limit":100}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"authors": []string{q.author()}, "limit": 100})
	}},
	{"thread", `{"#e":[root],"kinds":[1,7],"limit":500}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"#e": []string{q.keys.Threads[q.r.IntN(len(q.keys.Threads))]}, "kinds": []int{1, 7}, "limit": 500})
	}},
	{"notifications", `{"#p":[1],"limit":100}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"#p": []string{q.author()}, "limit": 100})
	}},
	{"global", `{"kinds":[1],"limit":500}`, func(*mixDraw) string { return `{"kinds":[1],"limit":500}` }},
}

// mixDraw draws the queries' keys as the data drew them: authors by
// activity (Zipf), contact lists of active authors, thread roots as often
// as replies name them.
type mixDraw struct {
	keys   *mixKeys
	sample *mixSample // for moreShapes
	r      *rand.Rand
	author func() string
}

func newMixDraw(keys *mixKeys, seed, stream uint64) *mixDraw {
	r := rand.New(rand.NewPCG(seed, 27+stream))
	z := rand.NewZipf(r, zipfS, 1, uint64(len(keys.Authors)-1))
	return &mixDraw{keys: keys, r: r, author: func() string { return keys.Authors[z.Uint64()] }}
}

// follows is the contact list of an active author drawn at random.
func (q *mixDraw) follows() []string {
	f := q.keys.Follows[q.r.IntN(len(q.keys.Follows))]
	out := make([]string, len(f))
	for i, a := range f {
		out[i] = q.keys.Authors[a]
	}
	return out
}

func (q *mixDraw) filter(f map[string]any) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// mixRelay is one relay the mix measures, on the data dir it loaded.
type mixRelay struct {
	name    string
	start   func(dir string, env ...string) (*server, error)
	foreign bool   // not built here: no pprof endpoint
	strfry  string // strfry's binary, for its import command ("": not strfry)
	dir     string
	loaded  mixLoad
	lat     map[string][]loadResult // by shape
	first   map[string][]loadResult // by shape: the pass right after a restart (mixRound)
	tput    map[string][]loadResult
	serving mem // the most it held while serving the mix (by RSS), over the rounds
	restart mem // the most it held from a restart through the first pass, over the rounds
}

// mixLoad is what loading a relay measured; it is kept in the data dir so
// a run that reuses the dir (-mix-keep) still reports it.
type mixLoad struct {
	Data       string       `json:"data"` // the events file it holds
	One        ingestResult `json:"one"`  // the first sample from 1 connection
	Sixteen    ingestResult `json:"sixteen"`
	All        ingestResult `json:"all"` // every event over websocket ({} when the bulk was imported)
	Imported   bool         `json:"imported"`
	AfterLoad  mem          `json:"after_load"` // a second after the last event
	PeakLoad   int64        `json:"peak_load"`  // the most it held while ingesting (VmHWM)
	PeakAnon   int64        `json:"peak_anon"`  // the most anonymous memory sampled while ingesting (0: not sampled)
	Disk       int64        `json:"disk"`
	LoadedWhen time.Time    `json:"loaded"`
}

const mixLoadedFile = "mix-loaded.json"

func (b *bench) mixRelays() []*mixRelay {
	rs := []*mixRelay{{name: "outpost", start: func(dir string, env ...string) (*server, error) {
		return startServer(b.outpost, nil, append(append(outpostEnv(dir), limitsLifted...), env...)...)
	}}}
	if b.strfry != "" {
		rs = append(rs, &mixRelay{name: "strfry", foreign: true, strfry: b.strfry, start: func(dir string, _ ...string) (*server, error) {
			return startStrfry(b.strfry, dir)
		}})
	}
	if b.mix.khatru || b.strfry == "" {
		rs = append(rs, &mixRelay{name: "bare khatru", start: func(dir string, env ...string) (*server, error) {
			return startServer(b.self, []string{"khatru", "-dir", filepath.Join(dir, "badger")}, env...)
		}})
	}
	return rs
}

// 10. The query mix of issue 27: every relay loads the same signed
// population over websocket (strfry's bulk with strfry import unless
// -mix-ws), is restarted on what it stored, and answers the six shapes in
// interleaved rounds, each REQ with keys of its own drawn from the data's
// distribution: latency from 1 connection, REQs/s from 16. Last, outpost
// alone under all six shapes at once for -sustain, its memory sampled.
func mixScenario(b *bench) ([]row, error) {
	events, keys, err := ensureMix(b.mix.cache, b.mix.seed, b.mix.events)
	if err != nil {
		return nil, err
	}
	if b.mix.more {
		if b.mix.sample, err = sampleMix(events, b.mix.events, b.mix.seed); err != nil {
			return nil, err
		}
	}
	root := b.mix.keep
	if root == "" {
		root = filepath.Join(b.tmp, "mix")
	}
	rs := b.mixRelays()
	for _, r := range rs {
		r.dir = filepath.Join(root, strings.ReplaceAll(r.name, " ", "-"))
		if err := b.loadMix(r, events); err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	for round := range b.mix.rounds {
		files, err := b.mixFilterFiles(keys, round)
		if err != nil {
			return nil, err
		}
		// A draw of its own (after mixSustained's), so that the first pass
		// does not warm the keys the round measures next.
		first, err := b.mixFilterFiles(keys, b.mix.rounds+1+round)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			step(fmt.Sprintf("round %d of %d: %s", round+1, b.mix.rounds, r.name))
			if err := b.mixRound(r, round, files, first); err != nil {
				return nil, fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	rows := b.mixRows(rs)
	if b.Sustain > 0 {
		step(fmt.Sprintf("outpost under the mix for %s", b.Sustain))
		sustained, err := b.mixSustained(rs[0], keys)
		if err != nil {
			return nil, fmt.Errorf("outpost: %w", err)
		}
		rows = append(rows, sustained...)
	}
	return rows, nil
}

// mixSustained restarts outpost on its data and sends it every shape of
// the mix at once, from mixSustainConns connections a shape (and, with
// -mix-more, each of moreShapes from one), for b.Sustain, sampling its
// memory (see sustain). The filters are a draw of their own; each
// connection takes them in turn, so keys come round again after a shape's
// 1,000 filters: its REQs/s are not a figure to compare.
func (b *bench) mixSustained(r *mixRelay, keys *mixKeys) ([]row, error) {
	files, err := b.mixFilterFiles(keys, b.mix.rounds)
	if err != nil {
		return nil, err
	}
	srv, err := r.start(r.dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	var loads [][]string
	for i, s := range mixShapesWith(b.mix.sample) {
		conns := mixSustainConns
		if i >= len(mixShapes) {
			conns = 1
		}
		loads = append(loads, []string{"-filters", files[s.name], "-conns", fmt.Sprint(conns)})
	}
	run, err := b.sustain(srv, loads)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("the mix's six shapes at once, %d connections each", mixSustainConns)
	if b.mix.sample != nil {
		what += fmt.Sprintf(", and the %d more from 1 each", len(moreShapes))
	}
	return run.rows(what, b.smoke), nil
}

// mixSustainConns is how many connections send each of the six shapes in
// mixSustained: 18 in all, near the 16 of the REQs/s figures.
const mixSustainConns = 3

// loadMix fills r's data dir with the events unless it holds them already.
func (b *bench) loadMix(r *mixRelay, events string) error {
	if raw, err := os.ReadFile(filepath.Join(r.dir, mixLoadedFile)); err == nil {
		if err := json.Unmarshal(raw, &r.loaded); err == nil && r.loaded.Data == filepath.Base(events) {
			step(fmt.Sprintf("%s: reusing %s, loaded %s", r.name, r.dir, r.loaded.LoadedWhen.Format(time.RFC3339)))
			return nil
		}
	}
	if err := os.RemoveAll(r.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return err
	}
	n := b.mix.events
	one, sixteen := min(5_000, n/20), min(20_000, n/5)
	bulk := r.strfry != "" && !b.mix.ws
	step(fmt.Sprintf("%s: loading %d events", r.name, n))
	prof, err := newProfiler(b.profileDir != "" && !r.foreign && !bulk)
	if err != nil {
		return err
	}
	srv, err := r.start(r.dir, prof.env()...)
	if err != nil {
		return err
	}
	l := mixLoad{Data: filepath.Base(events), Imported: bulk}
	sampling := sampleMem(srv)
	publish := func(res *ingestResult, from, to, conns int) error {
		if err != nil {
			return err
		}
		if err := runJSON(res, b.self, "mixpublish", "-url", srv.ws(), "-file", events, "-from", fmt.Sprint(from), "-to", fmt.Sprint(to), "-conns", fmt.Sprint(conns), "-window", fmt.Sprint(b.mix.window)); err != nil {
			return err
		}
		if res.Rejected > 0 {
			return fmt.Errorf("%d of %d events were refused", res.Rejected, res.Events)
		}
		return nil
	}
	err = publish(&l.One, 0, one, 1)
	err = publish(&l.Sixteen, one, one+sixteen, 16)
	if !bulk {
		// A minute of the bulk, a minute in: the store is past its first
		// tables and compactions have started. A bulk over before then
		// gets no profile.
		ended := make(chan struct{})
		profiled := prof.after(ended, time.Minute, time.Minute, filepath.Join(b.profileDir, "mix-load-"+strings.ReplaceAll(r.name, " ", "-")+".pprof"))
		err = publish(&l.All, one+sixteen, n, 16)
		close(ended)
		if perr := <-profiled; err == nil && perr != nil {
			err = fmt.Errorf("profile: %w", perr)
		}
		l.All = ingestResult{Events: n, Seconds: l.One.Seconds + l.Sixteen.Seconds + l.All.Seconds}
		l.All.PerSec = float64(n) / l.All.Seconds
	}
	time.Sleep(time.Second)
	l.AfterLoad = srv.mem()
	l.PeakLoad, l.PeakAnon = l.AfterLoad.Peak, sampling().Anon
	srv.stop()
	if err != nil {
		return err
	}
	if bulk {
		step(fmt.Sprintf("%s: strfry import of the other %d", r.name, n-one-sixteen))
		if err := strfryImport(r.strfry, r.dir, events, one+sixteen); err != nil {
			return err
		}
	}
	l.Disk = diskUsage(r.dir)
	l.LoadedWhen = time.Now().UTC()
	r.loaded = l
	raw, _ := json.Marshal(l)
	return os.WriteFile(filepath.Join(r.dir, mixLoadedFile), raw, 0o600)
}

// strfryImport adds the events from line skip on to the strfry in dir with
// its own bulk loader, which checks signatures as its relay does.
func strfryImport(bin, dir, events string, skip int) error {
	f, err := os.Open(events)
	if err != nil {
		return err
	}
	defer f.Close()
	in := bufio.NewReaderSize(f, 1<<20)
	for range skip {
		if _, err := in.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
			return err
		}
	}
	cmd := exec.Command(bin, "--config="+filepath.Join(dir, "strfry.conf"), "import")
	cmd.Dir, cmd.Stdin = dir, in
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("strfry import: %v\n%s", err, out)
	}
	return nil
}

// mixFilterFiles writes, per shape, the filters the REQs of a round take
// in turn. Each round draws its own keys, so the median of the rounds is
// not one draw's: which 1,000 keys were drawn moved a shape's p99 more than
// the relays differed.
func (b *bench) mixFilterFiles(keys *mixKeys, round int) (map[string]string, error) {
	return writeMixFilters(keys, b.mix.sample, b.mix.seed, round, mixFiltersPerShape(b.smoke), b.tmp)
}

// writeMixFilters writes per filters of each shape (moreShapes too, with a
// sample), round's draw, into dir and returns their paths by shape.
func writeMixFilters(keys *mixKeys, sample *mixSample, seed uint64, round, per int, dir string) (map[string]string, error) {
	q := newMixDraw(keys, seed, uint64(round))
	q.sample = sample
	files := map[string]string{}
	for _, s := range mixShapesWith(sample) {
		var sb strings.Builder
		for range per {
			sb.WriteString(s.draw(q) + "\n")
		}
		files[s.name] = filepath.Join(dir, fmt.Sprintf("mix-%s-%d.filters", strings.ReplaceAll(s.name, " ", "-"), round))
		if err := os.WriteFile(files[s.name], []byte(sb.String()), 0o644); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func mixFiltersPerShape(smoke bool) int {
	if smoke {
		return 50
	}
	return 1000
}

// mixRound restarts r on its data and measures every shape once, sampling
// its memory meanwhile. First, right after the restart, every shape's
// latency is measured once with the filters of first, before any load
// warms the relay's caches: what clients that reconnect at once after an
// upgrade or a crash meet.
func (b *bench) mixRound(r *mixRelay, round int, files, first map[string]string) error {
	prof, err := newProfiler(b.profileDir != "" && round == 0 && !r.foreign)
	if err != nil {
		return err
	}
	if b.mix.cold {
		if err := dropPageCache(); err != nil {
			return err
		}
	}
	srv, err := r.start(r.dir, prof.env()...)
	if err != nil {
		return err
	}
	defer srv.stop()
	sampling := sampleMem(srv)
	if r.lat == nil {
		r.lat, r.first, r.tput = map[string][]loadResult{}, map[string][]loadResult{}, map[string][]loadResult{}
	}
	// Latency from every filter once: of 200 REQs, p99 was the second
	// slowest, and one stray pause moved it by 2×.
	requests, load := mixFiltersPerShape(false), b.LoadTime
	if b.smoke {
		requests, load = 10, 500*time.Millisecond
	}
	latency := func(filters string) (lat loadResult, err error) {
		err = runJSON(&lat, b.self, "reqload", "-url", srv.ws(), "-filters", filters, "-conns", "1", "-requests", fmt.Sprint(requests))
		return lat, err
	}
	for _, s := range mixShapesWith(b.mix.sample) {
		lat, err := latency(first[s.name])
		if err != nil {
			return err
		}
		r.first[s.name] = append(r.first[s.name], lat)
	}
	// What the first minute costs: a warm at start shows here.
	restart := sampling()
	r.restart = heavier(r.restart, restart)
	sampling = sampleMem(srv)
	for _, s := range mixShapesWith(b.mix.sample) {
		lat, err := latency(files[s.name])
		if err != nil {
			return err
		}
		var tput loadResult
		slug := strings.ReplaceAll(r.name+"-"+s.name, " ", "-")
		profiled := prof.during(load, filepath.Join(b.profileDir, "mix-"+slug+".pprof"))
		if err := runJSON(&tput, b.self, "reqload", "-url", srv.ws(), "-filters", files[s.name], "-conns", "16", "-duration", load.String()); err != nil {
			return err
		}
		if err := <-profiled; err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		r.lat[s.name], r.tput[s.name] = append(r.lat[s.name], lat), append(r.tput[s.name], tput)
	}
	r.serving = heavier(r.serving, heavier(restart, sampling()))
	return nil
}

// heavier is the sample with more RSS.
func heavier(a, b mem) mem {
	if b.RSS > a.RSS {
		return b
	}
	return a
}

// sampleMem samples srv's memory every 200 ms until the function it
// returns is called, which returns the sample with the most RSS, its Anon
// raised to the most anonymous memory of any sample.
func sampleMem(srv *server) func() mem {
	stop, sampled := make(chan struct{}), make(chan mem)
	go func() {
		var top mem
		var anon int64
		for {
			m := srv.mem()
			if m.RSS > top.RSS {
				top = m
			}
			anon = max(anon, m.Anon)
			select {
			case <-stop:
				top.Anon = max(top.Anon, anon)
				sampled <- top
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() mem {
		close(stop)
		return <-sampled
	}
}

// dropPageCache writes the dirty pages out and drops the clean ones, so a
// relay reads its store from the disk (Linux, as root).
func dropPageCache() error {
	if out, err := exec.Command("sync").CombinedOutput(); err != nil {
		return fmt.Errorf("sync: %v: %s", err, out)
	}
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0o200); err != nil {
		return fmt.Errorf("-mix-cold: %w", err)
	}
	return nil
}

// mismatches counts the REQs two relays answered with different numbers of
// events in their first rounds (the same filters in the same order), and
// names the first.
func mismatches(a, c []loadResult) (n int, first string) {
	if len(a) == 0 || len(c) == 0 {
		return 0, ""
	}
	x, y := a[0].Counts, c[0].Counts
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			if n == 0 {
				first = fmt.Sprintf("REQ %d: %d vs %d", i, x[i], y[i])
			}
			n++
		}
	}
	return n, first
}

// mixRows compares outpost with every other relay, with issue 27's targets
// against strfry.
func (b *bench) mixRows(rs []*mixRelay) []row {
	p := planMix(b.mix.events)
	cache := "the OS page cache not dropped (warm after the first round)"
	if b.mix.cold {
		cache = "after the OS page cache was dropped (-mix-cold)"
	}
	more := ""
	if s := b.mix.sample; s != nil {
		more = fmt.Sprintf("; the keys of the shapes after global from an even sample of %d of its events", len(s.events))
	}
	rows := []row{{measure: "data", value: fmt.Sprintf("%d events: %d authors (Zipf s=%.1f activity), %d profiles, %d contact lists of %d", b.mix.events, p.authors, zipfS, p.authors, p.active, p.follows),
		baseline: fmt.Sprintf("keys of every REQ drawn from the data's distribution (%d filters per shape, drawn anew each round, seed %d%s); each relay restarted on its data every round, %s", mixFiltersPerShape(b.smoke), b.mix.seed, more, cache)}}
	for _, base := range rs[1:] {
		rows = append(rows, b.mixVersus(rs[0], base, base.strfry != "" && !b.smoke)...)
	}
	return rows
}

// mixVersus is outpost against one other relay on every figure.
func (b *bench) mixVersus(out, base *mixRelay, targets bool) []row {
	var rows []row
	vs := fmt.Sprintf(" (%s)", base.name)
	target := func(rw row, text string, holds bool) row {
		if targets {
			rw.target, rw.holds = text, ptr(holds)
		}
		return rw
	}
	for _, s := range mixShapesWith(b.mix.sample) {
		for _, q := range []struct {
			label     string
			f         func(loadResult) float64
			out, base []loadResult
		}{{"p50", p50, out.lat[s.name], base.lat[s.name]}, {"p99", p99, out.lat[s.name], base.lat[s.name]},
			{"first pass after a restart, p50", p50, out.first[s.name], base.first[s.name]},
			{"first pass after a restart, p99", p99, out.first[s.name], base.first[s.name]}} {
			v, bv := median(q.out, q.f), median(q.base, q.f)
			rows = append(rows, target(row{measure: fmt.Sprintf("%s %s, %s (1 connection)", s.name, s.filter, q.label), value: msText(v), baseline: msText(bv) + vs, ratio: v / bv}, "≤ 1×", v <= bv))
		}
		if len(out.lat[s.name]) > 1 {
			// The median hides which draw a shape lost on.
			rows = append(rows, row{measure: fmt.Sprintf("%s, p50 / p99 of each round (1 connection)", s.name),
				value: roundsText(out.lat[s.name]), baseline: roundsText(base.lat[s.name]) + vs})
		}
		v, bv := median(out.tput[s.name], perSec), median(base.tput[s.name], perSec)
		rows = append(rows, target(row{measure: fmt.Sprintf("%s, REQs/s from 16 connections", s.name), value: fmt.Sprintf("%.0f", v), baseline: fmt.Sprintf("%.0f", bv) + vs, ratio: v / bv}, "≥ 1×", v >= bv))
		n, first := mismatches(out.lat[s.name], base.lat[s.name])
		rw := row{measure: fmt.Sprintf("%s, events per REQ (mean); REQs answered with another count", s.name),
			value:    fmt.Sprintf("%d; %d of %d", out.lat[s.name][0].Returned, n, len(out.lat[s.name][0].Counts)),
			baseline: fmt.Sprintf("%d", base.lat[s.name][0].Returned) + vs}
		if n > 0 {
			rw.baseline += "; first: " + first
		}
		rows = append(rows, target(rw, "0 differ", n == 0))
	}
	ol, bl := out.loaded, base.loaded
	for _, ing := range []struct {
		label   string
		o, base ingestResult
	}{{fmt.Sprintf("EVENTs/s accepted, first %d from 1 connection, %d in flight", ol.One.Events, b.mix.window), ol.One, bl.One},
		{fmt.Sprintf("EVENTs/s accepted, next %d from 16 connections, %d in flight each", ol.Sixteen.Events, b.mix.window), ol.Sixteen, bl.Sixteen}} {
		rows = append(rows, target(row{measure: ing.label, value: fmt.Sprintf("%.0f", ing.o.PerSec), baseline: fmt.Sprintf("%.0f", ing.base.PerSec) + vs, ratio: ing.o.PerSec / ing.base.PerSec}, "≥ 1×", ing.o.PerSec >= ing.base.PerSec))
	}
	all := row{measure: fmt.Sprintf("EVENTs/s accepted, all %d over websocket", b.mix.events), value: fmt.Sprintf("%.0f", ol.All.PerSec), baseline: "– (strfry imported the bulk)"}
	if !bl.Imported {
		all.baseline, all.ratio = fmt.Sprintf("%.0f", bl.All.PerSec)+vs, ol.All.PerSec/bl.All.PerSec
		if base.name == "bare khatru" && !b.smoke {
			all.target, all.holds = "≥ 1×", ptr(ol.All.PerSec >= bl.All.PerSec)
		}
	}
	rows = append(rows, all)
	perEvent := func(l mixLoad) float64 { return float64(l.Disk) / float64(b.mix.events) }
	rows = append(rows, target(row{measure: "disk per event", value: fmt.Sprintf("%.0f B", perEvent(ol)), baseline: fmt.Sprintf("%.0f B", perEvent(bl)) + vs, ratio: perEvent(ol) / perEvent(bl)}, "≤ 1×", ol.Disk <= bl.Disk))
	memTarget := func(rw row, m mem) row {
		if targets {
			rw.target, rw.holds = "≤ 512 MiB", ptr(m.RSS <= 512<<20)
		}
		return rw
	}
	if !bl.Imported {
		rows = append(rows,
			memTarget(row{measure: "peak RSS while ingesting", value: mb(ol.PeakLoad), baseline: mb(bl.PeakLoad) + vs, ratio: float64(ol.PeakLoad) / float64(bl.PeakLoad)}, mem{RSS: ol.PeakLoad}),
			row{measure: "RSS a second after ingesting", value: memText(ol.AfterLoad), baseline: memText(bl.AfterLoad) + vs, ratio: float64(ol.AfterLoad.RSS) / float64(bl.AfterLoad.RSS)})
	} else {
		rows = append(rows, memTarget(row{measure: "peak RSS while ingesting", value: mb(ol.PeakLoad), baseline: "– (strfry imported the bulk)"}, mem{RSS: ol.PeakLoad}))
	}
	if ol.PeakAnon > 0 {
		anon := target(row{measure: "most anonymous memory sampled while ingesting (heap, stacks: RSS less mapped files)", value: mb(ol.PeakAnon), baseline: "– (strfry imported the bulk)"}, "≤ 256 MiB", ol.PeakAnon <= 256<<20)
		if bl.PeakAnon > 0 {
			anon.baseline, anon.ratio = mb(bl.PeakAnon)+vs, float64(ol.PeakAnon)/float64(bl.PeakAnon)
		}
		rows = append(rows, anon)
	}
	rows = append(rows, target(row{measure: "highest RSS sampled from a restart through the first pass", value: memText(out.restart), baseline: memText(base.restart) + vs, ratio: float64(out.restart.RSS) / float64(base.restart.RSS)}, "≤ 1×", out.restart.RSS <= base.restart.RSS))
	rows = append(rows, memTarget(row{measure: "highest RSS sampled while serving the mix", value: memText(out.serving), baseline: memText(base.serving) + vs, ratio: float64(out.serving.RSS) / float64(base.serving.RSS)}, out.serving))
	return rows
}

// roundsText is each round's p50 / p99 in ms, in the order they ran.
func roundsText(rs []loadResult) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%.2f / %.2f", r.P50ms, r.P99ms))
	}
	return strings.Join(parts, "; ")
}
