package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/relay"
)

// importSummary counts what an import did.
type importSummary struct {
	start                                time.Time
	lines                                int // lines read
	read, stored, duplicates, superseded int // events
	rejected                             map[string]int
	bad                                  int
	firstBad                             []badLine // the first few
}

// shownBad and shownReasons bound what the summary lists.
const (
	shownBad     = 5
	shownReasons = 8
)

func (s *importSummary) add(res []relay.ImportResult) {
	if s.rejected == nil {
		s.rejected = map[string]int{}
	}
	s.read += len(res)
	for _, r := range res {
		switch {
		case r.Reason != "":
			s.reject(r.Reason)
		case r.Outcome == events.Stored:
			s.stored++
		case r.Outcome == events.Duplicate:
			s.duplicates++
		default:
			s.superseded++
		}
	}
}

// maxReasons bounds the reasons counted apart: some name a number (of
// tags, of characters), and a hostile file could make every one differ.
const maxReasons = 64

// otherReasons counts the refusals past maxReasons distinct reasons.
const otherReasons = "(other reasons)"

func (s *importSummary) reject(reason string) {
	if _, seen := s.rejected[reason]; !seen && len(s.rejected) >= maxReasons {
		reason = otherReasons
	}
	s.rejected[reason]++
}

func (s *importSummary) badLines(bad []badLine) {
	s.bad += len(bad)
	for _, b := range bad {
		if len(s.firstBad) < shownBad {
			s.firstBad = append(s.firstBad, b)
		}
	}
}

func (s *importSummary) rate() float64 {
	if d := time.Since(s.start).Seconds(); d > 0 {
		return float64(s.read) / d
	}
	return 0
}

// line is the summary of an import into dir, one line, always printed.
func (s *importSummary) line(dir string, interrupted bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "import into %s: %d lines, %d events read, %d stored, %d duplicates, %d superseded, %d rejected",
		dir, s.lines, s.read, s.stored, s.duplicates, s.superseded, s.rejectedTotal())
	reasons := slices.SortedFunc(maps.Keys(s.rejected), func(a, b string) int {
		return cmp.Or(s.rejected[b]-s.rejected[a], strings.Compare(a, b))
	})
	for i, r := range reasons {
		if i == shownReasons {
			fmt.Fprintf(&b, " (and %d other reasons)", len(reasons)-i)
			break
		}
		fmt.Fprintf(&b, " (%d %q)", s.rejected[r], r)
	}
	fmt.Fprintf(&b, ", %d bad lines", s.bad)
	for _, l := range s.firstBad {
		fmt.Fprintf(&b, " (line %d: %q)", l.line, l.reason)
	}
	fmt.Fprintf(&b, "; %.0f events/s", s.rate())
	if interrupted {
		fmt.Fprintf(&b, "; interrupted after line %d: run it again to go on (what is stored counts as duplicates)", s.lines)
	}
	return b.String()
}

func (s *importSummary) rejectedTotal() int {
	n := 0
	for _, c := range s.rejected {
		n += c
	}
	return n
}

// progress shows an import's counts on a terminal, rewriting one line.
type progress struct {
	w    io.Writer
	last time.Time
}

// progressTo is a progress on stderr if it is a terminal, else nil.
func progressTo(stderr io.Writer) *progress {
	f, ok := stderr.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progress{w: f}
}

// show rewrites the progress line, at most a few times a second.
func (p *progress) show(s *importSummary) {
	if p == nil || time.Since(p.last) < 250*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\033[Kline %d: %d stored, %d duplicates, %d superseded, %d rejected, %d bad lines, %.0f events/s",
		s.lines, s.stored, s.duplicates, s.superseded, s.rejectedTotal(), s.bad, s.rate())
}

// end clears the progress line.
func (p *progress) end() {
	if p != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
