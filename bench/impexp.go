package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// impexpMain is "bench impexp": the rate of outpost import at several
// batch sizes, and of strfry import, on one file of signed events
// (testkit.MixedEvents), each into a new database. It prints a Markdown
// table for BENCHMARKS.md ("outpost import").
//
//	go run ./bench impexp -outpost ./outpost -strfry ../shared/tools/strfry/strfry -events 100000
func impexpMain(args []string) error {
	fs := flag.NewFlagSet("impexp", flag.ExitOnError)
	outpost := fs.String("outpost", "", "the outpost binary (required)")
	strfry := fs.String("strfry", "", "a strfry binary to compare with; empty: none")
	n := fs.Int("events", 100_000, "events in the file")
	batches := fs.String("batches", "1,10,100,1000,5000", "outpost import --batch sizes to measure")
	rounds := fs.Int("rounds", 1, "measurements of each, the best kept")
	fs.Parse(args)
	if *outpost == "" {
		return fmt.Errorf("-outpost is required")
	}
	tmp, err := os.MkdirTemp("", "outpost-impexp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "events.jsonl")
	step(fmt.Sprintf("signing %d events into %s", *n, file))
	if err := writeMixedFile(file, *n); err != nil {
		return err
	}
	fmt.Printf("| importer | batch | events/s (best of %d) | events per CPU-second |\n|---|---:|---:|---:|\n", *rounds)
	if *strfry != "" {
		best, err := bestOf(*rounds, func(dir string) *exec.Cmd { return strfryImportCmd(*strfry, dir, file) }, tmp)
		if err != nil {
			return err
		}
		fmt.Printf("| strfry import | — | %.0f | %.0f |\n", float64(*n)/best.wall.Seconds(), float64(*n)/best.cpu.Seconds())
	}
	for _, b := range strings.Split(*batches, ",") {
		best, err := bestOf(*rounds, func(dir string) *exec.Cmd {
			return exec.Command(*outpost, "import", file, "--batch", b, "--data-dir", dir)
		}, tmp)
		if err != nil {
			return err
		}
		fmt.Printf("| outpost import | %s | %.0f | %.0f |\n", b, float64(*n)/best.wall.Seconds(), float64(*n)/best.cpu.Seconds())
	}
	return nil
}

// took is how long a command ran, and the CPU time it used (user and
// system): on a machine others share, the CPU time is the steadier figure.
type took struct{ wall, cpu time.Duration }

// bestOf runs the command cmd makes, each time into a new directory, and
// returns its shortest time, with that run's CPU time.
func bestOf(rounds int, cmd func(dir string) *exec.Cmd, tmp string) (took, error) {
	var best took
	for r := range rounds {
		dir := filepath.Join(tmp, "db-"+strconv.Itoa(r)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return took{}, err
		}
		c := cmd(dir)
		start := time.Now()
		if out, err := c.CombinedOutput(); err != nil {
			return took{}, fmt.Errorf("%s: %v\n%s", strings.Join(c.Args, " "), err, out)
		}
		if d := time.Since(start); best.wall == 0 || d < best.wall {
			best = took{d, c.ProcessState.UserTime() + c.ProcessState.SystemTime()}
		}
		os.RemoveAll(dir)
	}
	return best, nil
}

// strfryImportCmd is strfry import of file into a new LMDB database in dir,
// with strfry's own defaults but the open-file limit it would raise (see
// strfryConf).
func strfryImportCmd(bin, dir, file string) *exec.Cmd {
	conf := filepath.Join(dir, "strfry.conf")
	os.MkdirAll(filepath.Join(dir, "db"), 0o700)
	os.WriteFile(conf, []byte(fmt.Sprintf("db = %q\nrelay {\n    nofiles = 0\n}\n", filepath.Join(dir, "db")+"/")), 0o600)
	c := exec.Command("sh", "-c", `exec "$0" --config="$1" import < "$2"`, bin, conf, file)
	return c
}

// writeMixedFile writes n events of testkit.MixedEvents as JSONL.
func writeMixedFile(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	testkit.MixedEvents(n, nostr.Now()-60, func(ev nostr.Event) bool {
		line, _ := json.Marshal(ev)
		w.Write(append(line, '\n'))
		return true
	})
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
