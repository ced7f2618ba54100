package main

import (
	"os"
	"strings"
	"testing"
)

// A smoke run's data is too small for the targets: it prints none, neither
// ✓ nor ✗; a full run prints each with its outcome.
func TestSmokeRunPrintsNoTargets(t *testing.T) {
	rows := []row{
		{measure: "clean note", value: "3 µs", baseline: "400 µs", ratio: 0.01, target: "≤ 2 µs/op", holds: ptr(false)},
		{measure: "req/s", value: "100", baseline: "90", ratio: 1.1, target: "≥ 0.5×", holds: ptr(true)},
	}
	for _, short := range []bool{true, false} {
		r := &report{short: short}
		r.add("1. scenario", rows)
		var out strings.Builder
		r.print(&out)
		got := out.String()
		hasTargets := strings.Contains(got, "TARGET") || strings.Contains(got, "✗") || strings.Contains(got, "✓")
		if hasTargets == short {
			t.Errorf("short=%v printed:\n%s", short, got)
		}
		if !short && (!strings.Contains(got, "≤ 2 µs/op ✗") || !strings.Contains(got, "≥ 0.5× ✓")) {
			t.Errorf("a full run's targets:\n%s", got)
		}
	}
}

func TestFewestAndMostChecks(t *testing.T) {
	run := benchRun{Results: map[string]goBench{
		"BenchmarkUptime30d/checks=100000": {NsPerOp: 3}, "BenchmarkUptime30d/checks=1000": {NsPerOp: 2},
		"BenchmarkTimeseries30d/checks=5": {NsPerOp: 1},
	}}
	small, big, err := fewestAndMostChecks(run, "BenchmarkUptime30d")
	if err != nil || small.n != 1000 || big.n != 100000 || big.NsPerOp != 3 {
		t.Fatalf("%+v %+v %v", small, big, err)
	}
	if _, _, err := fewestAndMostChecks(run, "BenchmarkTimeseries30d"); err == nil {
		t.Fatal("one size is not enough for a ratio")
	}
	for n, want := range map[int]string{5: "5", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// A partial run replaces its scenarios' sections and keeps the others, the
// head and the order; a scenario the file lacks is added at the end.
func TestMergeMarkdown(t *testing.T) {
	path := t.TempDir() + "/BENCHMARKS.md"
	full := &report{machine: map[string]string{"commit": "aaa"}}
	full.add("1. one", []row{{measure: "m1", value: "old 1"}})
	full.add("2. two", []row{{measure: "m2", value: "old 2"}})
	full.add("3. three", []row{{measure: "m3", value: "old 3"}})
	if err := full.writeMarkdown(path); err != nil {
		t.Fatal(err)
	}
	part := &report{machine: map[string]string{"commit": "bbb", "load average (1 min), start → end": "1 → 2"}}
	part.add("2. two", []row{{measure: "m2", value: "new 2"}})
	part.add("4. four", []row{{measure: "m4", value: "new 4"}})
	if err := part.mergeMarkdown(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	for _, want := range []string{"| commit | aaa |", "old 1", "new 2", "old 3", "new 4", "at commit bbb, load average 1 → 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("merged report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old 2") || strings.Count(got, "## 2. two") != 1 {
		t.Errorf("section 2 not replaced once:\n%s", got)
	}
	if i1, i2, i3, i4 := strings.Index(got, "## 1."), strings.Index(got, "## 2."), strings.Index(got, "## 3."), strings.Index(got, "## 4."); !(i1 < i2 && i2 < i3 && i3 < i4) {
		t.Errorf("sections out of order:\n%s", got)
	}
	if strings.Count(got, "at commit bbb") != 2 {
		t.Errorf("each re-measured section says when:\n%s", got)
	}
}
