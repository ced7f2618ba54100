package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op\s+([\d.]+) allocs/op)?`)

// runGoBench runs the benchmarks matching pattern in pkg and returns each one's median.
func runGoBench(dir, pkg, pattern string, benchtime string, count int) (map[string]goBench, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", pattern, "-benchmem", "-benchtime", benchtime, "-count", strconv.Itoa(count), pkg)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench %s %s: %v\n%s", pattern, pkg, err, out)
	}
	runs := map[string][]goBench{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		var b goBench
		b.NsPerOp, _ = strconv.ParseFloat(m[2], 64)
		b.BytesPerOp, _ = strconv.ParseFloat(m[3], 64)
		b.AllocsPerOp, _ = strconv.ParseFloat(m[4], 64)
		runs[m[1]] = append(runs[m[1]], b)
	}
	res := map[string]goBench{}
	for name, rs := range runs {
		slices.SortFunc(rs, func(a, b goBench) int { return int(a.NsPerOp - b.NsPerOp) })
		res[name] = rs[len(rs)/2]
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("no benchmark matched %s in %s:\n%s", pattern, pkg, out)
	}
	return res, nil
}
