// Command bench measures outpost the way a relay operator would: every
// figure is a ratio against a baseline measured in the same run on the same
// machine, next to the absolute numbers.
//
//	go run ./bench          the full suite; writes BENCHMARKS.md
//	go run ./bench -short   a smoke run in seconds (CI); no targets asserted
//	go run ./bench -only 8 -sustain 0 -cpuprofile prof/
//	                        the read path alone, without the sustained
//	                        load, keeping CPU profiles of each relay
//	go run ./bench -only 9 -previous '' -before ''
//	                        publishing under hostile subscriptions alone,
//	                        against the relay before the subscription index
//	go run ./bench -only mix -strfry ../shared/tools/strfry/strfry -mix-keep /var/tmp/mix
//	                        the query mix of issue 27 alone, against strfry,
//	                        keeping the loaded stores: a second run with the
//	                        same -mix-keep queries a new build without
//	                        loading again
//	go run ./bench -only 8 -strfry /path/to/strfry
//	                        the read path against strfry too (optional;
//	                        bench/strfry.sh builds it from its source, CI
//	                        neither builds nor runs it)
//
// It needs wrk (bench/tools.sh installs it from Debian).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	var err error
	args := os.Args[1:]
	sub := "run"
	if len(args) > 0 && args[0][0] != '-' {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "run":
		err = runMain(args)
	case "seed":
		err = seedMain(args)
	case "ingest":
		err = ingestMain(args)
	case "req":
		err = reqMain(args)
	case "stall":
		err = stallMain(args)
	case "bare":
		err = bareMain(args)
	case "khatru":
		err = khatruMain(args)
	case "reqload":
		err = reqloadMain(args)
	case "mixgen":
		err = mixGenMain(args)
	case "mixpublish":
		err = mixPublishMain(args)
	case "hostile":
		err = hostileMain(args)
	case "impexp":
		err = impexpMain(args)
	case "wot":
		err = wotMain(args)
	case "wot-load":
		err = wotLoadMain(args)
	default:
		err = fmt.Errorf("unknown subcommand %q", sub)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// sizes are the data a run works with.
type sizes struct {
	Bans, Words, Events, Mints int
	IngestEvents, Rounds       int
	StallEvents                int
	HangUpWait                 time.Duration // the stalled subscriber's wait for the relay to hang up
	Wrk                        time.Duration
	BenchTime                  string
	Count                      int
	ReadEvents, ReadRounds     int           // the read-path scenario's notes, and its rounds
	LoadTime                   time.Duration // each REQs/s measurement
	Settle                     time.Duration // how long after ingesting memory is measured again
	Sustain                    time.Duration // the sustained REQ loads (-sustain)
	HostileConns, HostileSubs  int           // issue 25's load: connections of REQs of 20 filters × 190 values
	HostileEvents              int           // published under it
	MixEvents                  int           // the query mix's store (-mix-events)
}

var full = sizes{Bans: 100_000, Words: 1_000, Events: 1_000_000, Mints: 1_000, IngestEvents: 20_000, Rounds: 3, StallEvents: 10_000, HangUpWait: 5 * time.Second, Wrk: 10 * time.Second, BenchTime: "1s", Count: 5,
	ReadEvents: 200_000, ReadRounds: 3, LoadTime: 10 * time.Second, Settle: 30 * time.Second, Sustain: 5 * time.Minute,
	HostileConns: 20, HostileSubs: 50, HostileEvents: 1000, MixEvents: 1_000_000}
var short = sizes{Bans: 1_000, Words: 100, Events: 2_000, Mints: 20, IngestEvents: 500, Rounds: 1, StallEvents: 300, HangUpWait: time.Second, Wrk: time.Second, BenchTime: "50ms", Count: 1,
	ReadEvents: 3_000, ReadRounds: 1, LoadTime: 3 * time.Second, Settle: time.Second, Sustain: 3 * time.Second,
	HostileConns: 2, HostileSubs: 5, HostileEvents: 100, MixEvents: 5_000}

// bench holds what the scenarios share.
type bench struct {
	sizes
	repo, tmp               string
	self                    string // this program, for its subcommands
	outpost                 string // outpost, built from the working tree
	previous, prevRev       string // outpost built at an earlier revision ("": none)
	before, beforeRev       string // outpost before the read-path work, for the read path ("": none)
	unindexed, unindexedRev string // outpost before issue 25's subscription index ("": none)
	profileDir              string // where CPU profiles of the read path go ("": none taken)
	strfry                  string // a strfry binary the read path and the mix are also measured against ("": none)
	mix                     mixOptions
	smoke                   bool   // -short: too little data for some targets
	seeded                  string // a data dir with Bans bans and Words words, once copySeeded has made it
	banned                  string // a banned key in it
	ban                     banOptions
}

// stripped builds without debug information, which nothing here reads and
// which is about half of linking's time.
const stripped = "-ldflags=-s -w"

// prepare installs wrk when missing and builds outpost (and the earlier
// revisions asked for); the caller removes b.tmp.
func (b *bench) prepare() error {
	var err error
	if b.repo, err = repoRoot(); err != nil {
		return err
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		if out, err := exec.Command("bash", filepath.Join(b.repo, "bench", "tools.sh")).CombinedOutput(); err != nil {
			return fmt.Errorf("installing wrk: %v\n%s", err, out)
		}
	}
	if b.tmp, err = os.MkdirTemp("", "outpost-bench-"); err != nil {
		return err
	}
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	step("building outpost")
	b.outpost = filepath.Join(b.tmp, "outpost")
	if err := b.build(b.repo, b.outpost); err != nil {
		return err
	}
	if b.prevRev != "" {
		step("building outpost at " + b.prevRev + " (the previous relay)")
		if b.previous, err = b.buildRevision(b.prevRev); err != nil {
			return err
		}
	}
	if b.beforeRev != "" {
		step("building outpost at " + b.beforeRev + " (before the read-path work)")
		if b.before, err = b.buildRevision(b.beforeRev); err != nil {
			return err
		}
	}
	if b.unindexedRev != "" {
		step("building outpost at " + b.unindexedRev + " (before the subscription index)")
		if b.unindexed, err = b.buildRevision(b.unindexedRev); err != nil {
			return err
		}
	}
	return nil
}

// copySeeded copies the data dir with Bans bans and Words words to dir,
// seeding it the first time a scenario asks: the query mix and the read
// path never do, and 100,000 bans take about 25 s.
func (b *bench) copySeeded(dir string) error {
	if b.seeded == "" {
		step(fmt.Sprintf("seeding %d bans and %d blocked words", b.Bans, b.Words))
		seededDir := filepath.Join(b.tmp, "seeded")
		var s seeded
		if err := runJSON(&s, b.self, "seed", "-dir", seededDir, "-bans", fmt.Sprint(b.Bans), "-words", fmt.Sprint(b.Words)); err != nil {
			return err
		}
		b.seeded, b.banned = seededDir, s.Banned
		step(fmt.Sprintf("seeded in %s", s.Took.Round(time.Millisecond)))
	}
	return copyDir(b.seeded, dir)
}

func runMain(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	smoke := fs.Bool("short", false, "a smoke run: tiny data, seconds, no BENCHMARKS.md")
	out := fs.String("out", "BENCHMARKS.md", "where the full run writes its report")
	only := fs.String("only", "", "run only the scenarios whose names contain this, and replace only their sections of -out")
	prev := fs.String("previous", "a3ccd4a", "also measure the relay at this git revision (a3ccd4a: the exact store behind khatru's own websocket loop); empty: don't")
	before := fs.String("before", "13d3e47", "also measure the read path at this git revision (13d3e47: before issue 16's work); empty: don't")
	unindexed := fs.String("unindexed", "b318367", "also measure publishing under hostile subscriptions at this git revision (b318367: before issue 25's subscription index); empty: don't")
	sustain := fs.Duration("sustain", full.Sustain, "how long the sustained REQ loads run, of the read path (8) and of the query mix (10) (0: not at all; -short: 3s)")
	profile := fs.String("cpuprofile", "", "write CPU profiles of each relay under the read-path REQ loads to this directory")
	strfry := fs.String("strfry", "", "also measure the read path and the query mix against this strfry binary (bench/strfry.sh builds one); empty: don't")
	mixEvents := fs.Int("mix-events", 0, "events in the query mix's store (0: 1,000,000; -short: 5,000)")
	mixSeed := fs.Uint64("mix-seed", 1, "seed of the query mix's data and of its queries' keys")
	mixCache := fs.String("mix-cache", defaultMixCache(), "where the query mix's signed events are kept between runs")
	mixKeep := fs.String("mix-keep", "", "keep each relay's loaded data dir of the query mix here, and reuse it when it holds the same events (to measure a new build without loading again)")
	mixRounds := fs.Int("mix-rounds", 3, "interleaved rounds of the query mix (-short: 1)")
	mixKhatru := fs.Bool("mix-khatru", false, "measure bare khatru in the query mix too (always when there is no -strfry)")
	mixWS := fs.Bool("mix-ws", false, "load strfry's whole store over websocket (default: its two ingest samples over websocket, the rest with strfry import)")
	mixMore := fs.Bool("mix-more", false, "the query mix also sends other queries clients send (ids, reactions, replies, notifications by kind, pages back through history, since, profile and lists; see moreShapes), with the same targets")
	mixWindow := fs.Int("mix-window", 16, "EVENTs each of the query mix's loading connections keeps in flight before their OKs, for every relay alike (1: wait for each OK)")
	mixCold := fs.Bool("mix-cold", false, "drop the OS page cache before each relay's round of the query mix (root only; slows everything else on the machine for a moment)")
	banSizes := fs.String("banlist-sizes", "", "the ban list's sizes (14.), comma-separated, each loaded on top of the one before (default: 0,100000,1000000; -short: 0,2000)")
	banReaders := fs.Bool("banlist-readers", true, "measure the ban list's follower and strfry plugin at each size (14.); false: the primary alone")
	banBurst := fs.Bool("banlist-burst", true, "measure the ban list's burst (14.), after the middle size")
	fs.Parse(args)

	b := &bench{sizes: full, smoke: *smoke}
	if *strfry != "" {
		var err error
		if b.strfry, err = exec.LookPath(*strfry); err != nil {
			return fmt.Errorf("-strfry: %w", err)
		}
		if b.strfry, err = filepath.Abs(b.strfry); err != nil {
			return err
		}
	}
	if *smoke {
		b.sizes = short
		*mixRounds = 1
	} else {
		b.prevRev, b.beforeRev, b.unindexedRev = *prev, *before, *unindexed
		b.Sustain = *sustain
	}
	if *mixEvents > 0 {
		b.MixEvents = *mixEvents
	}
	ban, err := parseBanOptions(*banSizes, *banReaders, *banBurst)
	if err != nil {
		return err
	}
	b.ban = ban
	b.mix = mixOptions{events: b.MixEvents, seed: *mixSeed, cache: *mixCache, keep: *mixKeep, rounds: *mixRounds, khatru: *mixKhatru, ws: *mixWS, cold: *mixCold, more: *mixMore, window: max(*mixWindow, 1)}
	if *profile != "" {
		var err error
		if b.profileDir, err = filepath.Abs(*profile); err != nil {
			return err
		}
		if err := os.MkdirAll(b.profileDir, 0o755); err != nil {
			return err
		}
	}
	if err := b.prepare(); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)

	rep := &report{machine: machine(), short: *smoke, sizes: b.sizes}
	loadStart := loadAverage()
	for _, sc := range scenarios {
		if !strings.Contains(sc.name, *only) {
			continue
		}
		step(sc.name)
		rows, err := sc.run(b)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		rep.add(sc.name, rows)
	}
	rep.machine["load average (1 min), start → end"] = loadStart + " → " + loadAverage()
	rep.print(os.Stdout)
	if !*smoke {
		path := *out
		if !filepath.IsAbs(path) {
			path = filepath.Join(b.repo, path)
		}
		write := rep.writeMarkdown
		if *only != "" {
			write = rep.mergeMarkdown
		}
		if err := write(path); err != nil {
			return err
		}
		step("wrote " + path)
	}
	return nil
}

func step(s string) { fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), s) }

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(string(out[:len(out)-1])), nil
}

// copyDir copies a seeded data dir, so every run starts from the same state.
func copyDir(src, dst string) error {
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("cp: %v: %s", err, out)
	}
	os.Remove(filepath.Join(dst, "outpost.sock"))
	return nil
}

// outpostEnv is the environment every benchmarked outpost runs with.
func outpostEnv(dataDir string) []string {
	return []string{"OUTPOST_ADDR=127.0.0.1:0", "OUTPOST_DATA_DIR=" + dataDir, "OUTPOST_RATE_LIMIT=0", "OUTPOST_LOG_LEVEL=error"}
}

// Relay limits for load from one address: lifted (checked on every event,
// never hit) for outpost, off for the baseline.
var (
	limitsLifted = []string{"OUTPOST_RELAY_EVENTS_PER_MINUTE=1000000000", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE=1000000000", "OUTPOST_RELAY_IP_CONNECTIONS=1000000"}
	limitsOff    = []string{"OUTPOST_RELAY_EVENTS_PER_MINUTE=0", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE=0", "OUTPOST_RELAY_IP_CONNECTIONS=0"}
)

// build builds cmd/outpost from the module at src; with -cpuprofile, with
// a pprof endpoint added (see pprofSource).
func (b *bench) build(src, bin string) error {
	args := []string{"build", stripped, "-o", bin}
	if b.profileDir != "" {
		overlay, err := pprofOverlay(b.tmp, src)
		if err != nil {
			return err
		}
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command("go", append(args, "./cmd/outpost")...)
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build in %s: %v\n%s", src, err, out)
	}
	return nil
}

// buildRevision builds cmd/outpost as it was at rev.
func (b *bench) buildRevision(rev string) (string, error) {
	src := filepath.Join(b.tmp, "src-"+rev)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("sh", "-c", "git archive \"$0\" | tar -x -C \"$1\"", rev, src)
	archive.Dir = b.repo
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %v\n%s", rev, err, out)
	}
	bin := filepath.Join(b.tmp, "outpost-"+rev)
	return bin, b.build(src, bin)
}
