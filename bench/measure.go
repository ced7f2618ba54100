package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// wrkResult is what wrk measured.
type wrkResult struct {
	ReqPerSec float64
	P99       time.Duration
	Non2xx    int
}

var (
	wrkRPS    = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	wrkP99    = regexp.MustCompile(`(?m)^\s+99%\s+([\d.]+)(us|ms|s)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
)

// runWrk loads url with wrk (2 threads, conns connections) for d.
func runWrk(url string, conns int, d time.Duration, header ...string) (wrkResult, error) {
	args := []string{"-t2", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", max(1, int(d.Seconds()))), "--latency"}
	for i := 0; i+1 < len(header); i += 2 {
		args = append(args, "-H", header[i]+": "+header[i+1])
	}
	out, err := exec.Command("wrk", append(args, url)...).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	var r wrkResult
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk: no Requests/sec in\n%s", out)
	}
	r.ReqPerSec, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := wrkP99.FindSubmatch(out); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(m[2])]
		r.P99 = time.Duration(v * float64(unit))
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		r.Non2xx, _ = strconv.Atoi(string(m[1]))
	}
	return r, nil
}

// goBench is one Go benchmark's median over its runs.
type goBench struct {
	NsPerOp     float64
	BytesPerOp  float64
	AllocsPerOp float64
	Metrics     map[string]float64 // every "value unit" pair, custom ones included
}

var benchName = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?(\s|$)`)

// benchRun is the medians of one run of a package's benchmarks, and what the
// benchmark process itself used.
type benchRun struct {
	Results map[string]goBench
	PeakRSS int64         // bytes
	CPU     time.Duration // user + system
}

// goBench runs pkg's benchmarks matching pattern (with -test.short in a
// smoke run, which makes their data small), returning each one's median (by
// ns/op) over count runs. It compiles each package's tests once per run.
func (b *bench) goBench(pkg, pattern string, benchtime string, count int) (benchRun, error) {
	bin := filepath.Join(b.tmp, filepath.Base(pkg)+".test")
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("go", "test", "-c", stripped, "-o", bin, pkg)
		build.Dir = b.repo
		if out, err := build.CombinedOutput(); err != nil {
			return benchRun{}, fmt.Errorf("go test -c %s: %v\n%s", pkg, err, out)
		}
	}
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", pattern, "-test.benchmem", "-test.benchtime", benchtime, "-test.count", strconv.Itoa(count),
		fmt.Sprint("-test.short=", b.smoke))
	cmd.Dir = filepath.Join(b.repo, pkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return benchRun{}, fmt.Errorf("benchmarks %s in %s: %v\n%s", pattern, pkg, err, out)
	}
	run := benchRun{Results: map[string]goBench{}}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		run.PeakRSS = ru.Maxrss << 10
		run.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	runs := map[string][]goBench{}
	name := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := benchName.FindStringSubmatch(line); m != nil {
			name = m[1]
		}
		// A result may come on a line of its own when a log line cut in.
		f := strings.Fields(line)
		at := slices.Index(f, "ns/op")
		if name == "" || at < 1 {
			continue
		}
		b := goBench{Metrics: map[string]float64{}}
		for i := at - 1; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			b.Metrics[f[i+1]] = v
		}
		b.NsPerOp, b.BytesPerOp, b.AllocsPerOp = b.Metrics["ns/op"], b.Metrics["B/op"], b.Metrics["allocs/op"]
		runs[name] = append(runs[name], b)
	}
	for name, rs := range runs {
		slices.SortFunc(rs, func(a, b goBench) int { return cmp.Compare(a.NsPerOp, b.NsPerOp) })
		run.Results[name] = rs[len(rs)/2]
	}
	if len(run.Results) == 0 {
		return run, fmt.Errorf("no benchmark matched %s in %s:\n%s", pattern, pkg, out)
	}
	return run, nil
}
