package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// containerLimit is the memory of the container scenario 8 runs outpost and
// bare khatru in, with their default settings: the size the issue asks
// outpost to fit after 200,000 notes.
const containerLimit = 150 << 20

// cgroup is a memory cgroup of this machine's (v1 or v2) that the bench
// creates for one relay and removes after it.
type cgroup struct {
	dir        string
	peakFile   string // the highest usage, in bytes
	eventsFile string // the file counting OOM kills as "oom_kill N"
}

// newCgroup creates a memory cgroup limited to limit bytes; it needs root
// and a cgroup file system mounted writable.
func newCgroup(name string, limit int64) (*cgroup, error) {
	c := &cgroup{dir: filepath.Join("/sys/fs/cgroup/memory", name), peakFile: "memory.max_usage_in_bytes", eventsFile: "memory.oom_control"}
	limitFile := "memory.limit_in_bytes"
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err != nil {
		ctl, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		if err != nil || !slices.Contains(strings.Fields(string(ctl)), "memory") {
			return nil, errors.New("no memory cgroup controller to use (v1 at /sys/fs/cgroup/memory, or v2 with memory in the root's subtree_control)")
		}
		c = &cgroup{dir: filepath.Join("/sys/fs/cgroup", name), peakFile: "memory.peak", eventsFile: "memory.events"}
		limitFile = "memory.max"
	}
	os.Remove(c.dir) // what an interrupted run left
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// start starts bin with args in the cgroup: a shell moves itself in and
// then becomes bin, so that nothing bin does is charged elsewhere.
func (c *cgroup) start(bin string, args []string, env ...string) (*server, error) {
	return startServer("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(c.dir, "cgroup.procs"), bin}, args...), env...)
}

func (c *cgroup) peak() int64 {
	b, _ := os.ReadFile(filepath.Join(c.dir, c.peakFile))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func (c *cgroup) oomKills() int64 {
	b, _ := os.ReadFile(filepath.Join(c.dir, c.eventsFile))
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func (c *cgroup) remove() { os.Remove(c.dir) }

// contained is how one relay fared ingesting in the container.
type contained struct {
	name           string
	ingest         ingestResult
	after, settled mem
	peak, oomKills int64
	err            error // the relay could not be measured at all
}

// inContainer ingests the scenario's notes into a relay that launch starts
// in a fresh containerLimit cgroup on an empty data dir, and measures its
// memory as the scenario does outside one.
func (b *bench) inContainer(name string, launch func(cg *cgroup, dir string) (*server, error)) contained {
	r := contained{name: name}
	cg, err := newCgroup("outpost-bench", containerLimit)
	if err != nil {
		r.err = err
		return r
	}
	defer cg.remove()
	dir := filepath.Join(b.tmp, "container")
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.err = err
		return r
	}
	srv, err := launch(cg, dir)
	if err != nil {
		r.err = err
		return r
	}
	defer srv.stop()
	// A relay the kernel kills makes every later publish fail: counted as
	// refused, not an error.
	if err := runJSON(&r.ingest, b.self, "ingest", "-url", srv.ws(), "-events", fmt.Sprint(b.ReadEvents),
		"-authors", fmt.Sprint(readAuthors), "-spread", "-seed", "7"); err != nil && cg.oomKills() == 0 {
		r.err = err
		return r
	}
	time.Sleep(time.Second)
	r.after = srv.mem()
	time.Sleep(b.Settle)
	r.settled = srv.mem()
	r.peak, r.oomKills = cg.peak(), cg.oomKills()
	return r
}

// containerRows reports outpost against bare khatru, both with their
// defaults in the container; outpost's target is to take every note.
func (b *bench) containerRows(out, base contained) []row {
	where := fmt.Sprintf("in a %s container (memory cgroup), default settings", mb(containerLimit))
	if out.err != nil {
		return []row{{measure: fmt.Sprintf("%d notes %s", b.ReadEvents, where), value: "not measured: " + out.err.Error(), baseline: "–"}}
	}
	fared := func(c contained) (string, bool) {
		if c.err != nil {
			return "not measured: " + c.err.Error(), false
		}
		if c.oomKills > 0 || c.ingest.Rejected > 0 {
			v := fmt.Sprintf("%d OOM kill(s)", c.oomKills)
			if c.ingest.Events > 0 {
				v = fmt.Sprintf("%d of %d taken, ", int64(c.ingest.Events)-c.ingest.Rejected, c.ingest.Events) + v
			}
			return v, false
		}
		return fmt.Sprintf("%.0f/s, all %d taken", c.ingest.PerSec, c.ingest.Events), true
	}
	memory := func(c contained, m mem) string {
		if c.err != nil || c.oomKills > 0 {
			return "killed"
		}
		return fmt.Sprintf("%s, the cgroup's peak %s", memText(m), mb(c.peak))
	}
	v, ok := fared(out)
	bv, bok := fared(base)
	rw := row{measure: fmt.Sprintf("EVENTs accepted, %d notes from 16 connections %s", b.ReadEvents, where), value: v, baseline: bv + " (" + base.name + ")"}
	if ok && bok {
		rw.ratio = out.ingest.PerSec / base.ingest.PerSec
	}
	if !b.smoke {
		rw.target, rw.holds = "all, no OOM kill", ptr(ok)
	}
	return []row{rw,
		{measure: "RSS a second after, in that container", value: memory(out, out.after), baseline: memory(base, base.after) + " (" + base.name + ")"},
		{measure: fmt.Sprintf("RSS %s after, idle, in that container", b.Settle), value: memory(out, out.settled), baseline: memory(base, base.settled) + " (" + base.name + ")"},
	}
}
