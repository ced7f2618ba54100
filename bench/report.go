package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one measured figure with its baseline.
type row struct {
	measure, value, baseline string
	ratio                    float64 // value / baseline; 0: none
	target                   string
	holds                    *bool
}

type section struct {
	name string
	rows []row
}

type report struct {
	machine  map[string]string
	short    bool
	sizes    sizes
	sections []section
}

func (r *report) add(name string, rows []row) { r.sections = append(r.sections, section{name, rows}) }

func (rw row) ratioText() string {
	if rw.ratio == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", rw.ratio)
}

func (rw row) holdsText() string {
	switch {
	case rw.target == "":
		return ""
	case rw.holds == nil:
		return rw.target
	case *rw.holds:
		return rw.target + " ✓"
	default:
		return rw.target + " ✗"
	}
}

// print writes the table; a smoke run's has no targets, which its small
// data could not meet and it does not measure.
func (r *report) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "SCENARIO\tMEASURE\tOUTPOST\tBASELINE\tRATIO")
	if !r.short {
		fmt.Fprint(tw, "\tTARGET")
	}
	fmt.Fprintln(tw)
	for _, s := range r.sections {
		for _, rw := range s.rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", s.name, rw.measure, rw.value, rw.baseline, rw.ratioText())
			if !r.short {
				fmt.Fprintf(tw, "\t%s", rw.holdsText())
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
}

func (r *report) writeMarkdown(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# outpost benchmarks\n\nMeasured by `go run ./bench` on %s. Every figure is next to a baseline measured in the same run\non the same machine; the ratio is outpost ÷ baseline. Load comes from wrk (HTTP) and a go-nostr client\n(websocket), each in its own process on 127.0.0.1.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("## Machine\n\n| | |\n|---|---|\n")
	keys := make([]string, 0, len(r.machine))
	for k := range r.machine {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %s |\n", k, r.machine[k])
	}
	fmt.Fprintf(&b, "\nData: %d bans, %d blocked words, %d stored events, %d mints; ingest %d events × %d rounds; wrk %s per run, 2 threads.\n\n",
		r.sizes.Bans, r.sizes.Words, r.sizes.Events, r.sizes.Mints, r.sizes.IngestEvents, r.sizes.Rounds, r.sizes.Wrk)
	for _, s := range r.sections {
		b.WriteString(s.markdown(""))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func (s section) markdown(note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", s.name)
	if note != "" {
		b.WriteString(note + "\n\n")
	}
	b.WriteString("| measure | outpost | baseline | ratio | target |\n|---|---|---|---|---|\n")
	for _, rw := range s.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", rw.measure, rw.value, rw.baseline, rw.ratioText(), rw.holdsText())
	}
	b.WriteString("\n")
	return b.String()
}

// mergeMarkdown puts a partial run's sections (-only) into the report at
// path in place of the same scenarios' sections, each saying when, at which
// commit, under what load and on what machine (which may not be the full
// run's) it was measured again; the rest of the file,
// the machine table included, stays the full run's. Without a report at
// path it writes a new one.
func (r *report) mergeMarkdown(path string) error {
	old, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return r.writeMarkdown(path)
	} else if err != nil {
		return err
	}
	note := fmt.Sprintf("_Measured again by `go run ./bench -only` on %s at commit %s, load average %s, on %s (%s cores, %s of memory, %s, %s); the rest of this file is from the full run above._",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.machine["commit"], r.machine["load average (1 min), start → end"],
		r.machine["cpu"], r.machine["cores"], r.machine["memory"], r.machine["kernel"], r.machine["go"])
	// Sections start at "## " lines; the text before the first is the head.
	parts := strings.SplitAfter(string(old), "\n")
	var chunks []string
	for _, line := range parts {
		if strings.HasPrefix(line, "## ") || len(chunks) == 0 {
			chunks = append(chunks, "")
		}
		chunks[len(chunks)-1] += line
	}
	for _, s := range r.sections {
		fresh, replaced := s.markdown(note), false
		for i, c := range chunks {
			if strings.HasPrefix(c, "## "+s.name+"\n") {
				chunks[i], replaced = fresh, true
			}
		}
		if !replaced {
			chunks = append(chunks, fresh)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(chunks, "")), 0o644)
}
