package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// otherVariables are the OUTPOST_* names read by something other than a
// setting of serve or strfry-policy; they are not misspellings.
var otherVariables = []string{
	"OUTPOST_NSEC", "OUTPOST_NPUB", // nip98 keygen prints both, nip98 sign reads the first
	"OUTPOST_NUTSHELL_DIR", "OUTPOST_BIN", "OUTPOST_BENCH_PPROF", "OUTPOST_TEST_KILL_SEED", "OUTPOST_TEST_AS_MAIN", // the test suites and the benchmarks
}

// knownVariables are the OUTPOST_* names outpost reads: the environment
// twins of serve's and strfry-policy's settings, and otherVariables.
func knownVariables() []string {
	known := slices.Clone(otherVariables)
	strfry, _ := newStrfryFlags()
	for _, fs := range []*flag.FlagSet{newConfigFlags(newFlagSet("serve")).fs, strfry} {
		fs.VisitAll(func(f *flag.Flag) { known = append(known, settings.EnvName(f.Name)) })
	}
	return known
}

// unknownVariables warns of each OUTPOST_* variable in environ that names no
// setting: a misspelt one (OUTPOST_RATE_LIMT=5) would otherwise be ignored
// without a word. Each warning names the closest setting when one is close.
func unknownVariables(environ []string) []string {
	known := knownVariables()
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "OUTPOST_") || slices.Contains(known, name) {
			continue
		}
		w := fmt.Sprintf("%s is not a setting of outpost and is ignored", name)
		if near := closest(name, known); near != "" {
			w += fmt.Sprintf("; did you mean %s?", near)
		}
		warnings = append(warnings, w)
	}
	return warnings
}

// closest is the name in names nearest to s by edit distance, if it is
// within a third of s's length; else "".
func closest(s string, names []string) string {
	best, bestD := "", len(s)/3+1
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
