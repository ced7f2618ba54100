package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine describes where the numbers were measured.
func machine() map[string]string {
	m := map[string]string{"cores": strconv.Itoa(runtime.NumCPU()), "go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 2 {
			m["memory"] = f[1] + " kB"
		}
	}
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		m["kernel"] = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m["commit"] = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("wrk", "--version").CombinedOutput(); err == nil {
		m["wrk"] = strings.Fields(string(out))[1]
	}
	return m
}

// loadAverage is the 1-minute load average: on a shared machine, other work
// competes with the figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
