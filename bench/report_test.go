package main

import (
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
