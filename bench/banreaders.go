package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/publish"
)

// The readers of the ban list at each size (14.): a follower outpost and
// the strfry plugin, each started from nothing against the primary, and
// the pages the primary publishes on its relay.

// follower starts a follower outpost on an empty data dir and times it
// until it enforces the primary's last key (pages come in order of key),
// then a new ban.
func (bb *banBench) follower(n int, label func(string) string) ([]row, error) {
	dir := filepath.Join(bb.b.tmp, fmt.Sprintf("banlist-follower-%d", n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	f, err := startServer(bb.b.outpost, nil, append(outpostEnv(dir), "OUTPOST_BANLIST_FOLLOW="+bb.srv.url+"/banlist")...)
	if err != nil {
		return nil, err
	}
	defer f.stop()
	sampling, stopSampling := context.WithCancel(context.Background())
	defer stopSampling()
	peakAnon := sampleAnon(sampling, f.cmd.Process.Pid)
	last := ""
	if len(bb.banned) > 0 {
		last = slices.Max(bb.banned)
	}
	if err := waitFor(readerWait, func() bool { return last == "" || blocked(f.url, last) }); err != nil {
		return slowReader(label("follower: start from nothing to the whole list enforced"), f.cmd.Process.Pid), nil
	}
	took, cpu := time.Since(start), cpuTime(f.cmd.Process.Pid)
	m := f.mem()
	enforced, err := bb.newBanSeen(func(k string) bool { return blocked(f.url, k) })
	if err != nil {
		return nil, fmt.Errorf("follower: %w", err)
	}
	// What a follower does once it holds the list (before, it signed and
	// stored its own copy of every page then, its peak) is in its peak.
	time.Sleep(afterSync - time.Since(start) + took)
	later := f.mem()
	return []row{
		{measure: label("follower: start from nothing to the whole list enforced (its CPU time then)"), value: startText(took, cpu), target: "≤ 10 s", holds: ptr(took <= 10*time.Second)},
		{measure: label("follower: memory then (anonymous / peak RSS)"), value: fmt.Sprintf("%s / %s", mb(m.Anon), mb(m.Peak)), target: "peak ≤ 128 MiB", holds: ptr(m.Peak <= 128<<20)},
		{measure: label("follower: a new ban on the primary enforced after"), value: enforced.Round(time.Millisecond).String(), target: "≤ 5 s", holds: ptr(enforced <= 5*time.Second)},
		{measure: label(fmt.Sprintf("follower: memory through the %s after the list was enforced (most anonymous / peak RSS)", afterSync)),
			value: fmt.Sprintf("%s / %s", mb(peakAnon()), mb(later.Peak)), target: "peak ≤ 128 MiB", holds: ptr(later.Peak <= 128<<20)},
	}, nil
}

// afterSync is how long a follower's memory is watched once it enforces
// the whole list.
const afterSync = 30 * time.Second

// readerWait bounds a reader's start: one that takes longer is a row
// that says so, not the end of the run.
const readerWait = 2 * time.Minute

// slowReader is the row of a reader that did not start within readerWait.
func slowReader(measure string, pid int) []row {
	m := procMem(pid)
	return []row{{measure: measure, value: fmt.Sprintf("not within %s (CPU %s, peak RSS %s)", readerWait, cpuTime(pid).Round(10*time.Millisecond), mb(m.Peak)),
		target: "≤ 10 s", holds: ptr(false)}}
}

// blocked asks an outpost whether it holds k banned.
func blocked(base, k string) bool {
	body, _, err := fetch(base + "/banlist/blocked/pubkeys/" + k)
	var st struct {
		Blocked bool `json:"blocked"`
	}
	return err == nil && json.Unmarshal(body, &st) == nil && st.Blocked
}

// newBanSeen bans a new key on the primary and times it until seen says
// it is enforced (for at most 30 s).
func (bb *banBench) newBanSeen(seen func(k string) bool) (time.Duration, error) {
	start := time.Now()
	keys, err := bb.banNew(1)
	if err != nil {
		return 0, err
	}
	if err := waitFor(30*time.Second, func() bool { return seen(keys[0]) }); err != nil {
		return 0, fmt.Errorf("a new ban %w", err)
	}
	return time.Since(start), nil
}

// plugin is a running strfry-policy process, talked to as strfry does.
type plugin struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	out *bufio.Scanner
}

func (bb *banBench) startPlugin(cache string) (*plugin, error) {
	cmd := exec.Command(bb.b.outpost, "strfry-policy", "--from", bb.srv.url+"/banlist", "--cache", cache, "--interval", "1s")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &plugin{cmd: cmd, in: bufio.NewWriterSize(in, 64<<10), out: bufio.NewScanner(out)}, nil
}

func (p *plugin) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// pluginLine is strfry's line for a note by pk.
func pluginLine(i int, pk string) string {
	return fmt.Sprintf(`{"type":"new","event":{"id":"%064x","pubkey":"%s","created_at":1800000000,"kind":1,"tags":[],"content":"gm, a note of the spam wave, number %d","sig":"%0128x"},"receivedAt":1800000000,"sourceType":"IP4","sourceInfo":"127.0.0.1"}`+"\n",
		i, pk, i, i)
}

// ask sends one line and reads its answer, under a deadline of its own (a
// hung plugin is killed by plugin's stop).
func (p *plugin) ask(line string) (string, error) {
	answer := make(chan string, 1)
	go func() {
		p.in.WriteString(line)
		p.in.Flush()
		if p.out.Scan() {
			answer <- p.out.Text()
		}
		close(answer)
	}()
	select {
	case a, ok := <-answer:
		if !ok {
			return "", fmt.Errorf("the plugin ended: %v", p.out.Err())
		}
		return a, nil
	case <-time.After(readerWait):
		return "", fmt.Errorf("the plugin did not answer within %s", readerWait)
	}
}

func (bb *banBench) plugin(n int, label func(string) string) ([]row, error) {
	cache := filepath.Join(bb.b.tmp, fmt.Sprintf("plugin-%d.cache", n))
	defer os.Remove(cache)
	start := time.Now()
	p, err := bb.startPlugin(cache)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	// Without a cache file it answers once it holds the whole list.
	if _, err := p.ask(pluginLine(0, bb.keys.next())); err != nil {
		return slowReader(label("strfry plugin: start without a cache to its first answer (the whole list)"), p.cmd.Process.Pid), nil
	}
	took, cpu := time.Since(start), cpuTime(p.cmd.Process.Pid)
	decisions := 200_000
	if bb.b.smoke {
		decisions = 5_000
	}
	rate, err := p.decide(bb, decisions)
	if err != nil {
		return nil, err
	}
	m := procMem(p.cmd.Process.Pid)
	enforced, err := bb.newBanSeen(func(k string) bool {
		a, err := p.ask(pluginLine(1, k))
		return err == nil && strings.Contains(a, `"reject"`)
	})
	if err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	return []row{
		{measure: label("strfry plugin: start without a cache to its first answer (the whole list; its CPU time then)"), value: startText(took, cpu), target: "≤ 10 s", holds: ptr(took <= 10*time.Second)},
		{measure: label("strfry plugin: decisions/s (half of them banned keys)"), value: fmt.Sprintf("%.0f", rate), target: "≥ 50,000/s", holds: ptr(rate >= 50_000)},
		{measure: label("strfry plugin: memory then (anonymous / peak RSS)"), value: fmt.Sprintf("%s / %s", mb(m.Anon), mb(m.Peak)), target: "peak ≤ 128 MiB", holds: ptr(m.Peak <= 128<<20)},
		{measure: label("strfry plugin: a new ban on the primary enforced after (--interval 1s)"), value: enforced.Round(time.Millisecond).String(), target: "≤ 5 s", holds: ptr(enforced <= 5*time.Second)},
	}, nil
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// decide streams k lines through the plugin, as strfry would, and returns
// its decisions a second; every banned key must be refused.
func (p *plugin) decide(bb *banBench, k int) (float64, error) {
	lines := make([]string, k)
	for i := range lines {
		var pk string
		if len(bb.banned) > 0 && i%2 == 0 {
			pk = bb.banned[(i*7919)%len(bb.banned)]
		} else {
			pk = bb.keys.next()
		}
		lines[i] = pluginLine(i, pk)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		for _, l := range lines {
			if ctx.Err() != nil {
				return
			}
			p.in.WriteString(l)
		}
		p.in.Flush()
	}()
	start := time.Now()
	rejected := 0
	for range k {
		if !p.out.Scan() {
			return 0, fmt.Errorf("the plugin ended: %v", p.out.Err())
		}
		if strings.Contains(p.out.Text(), `"reject"`) {
			rejected++
		}
	}
	if want := (k + 1) / 2 * btoi(len(bb.banned) > 0); rejected != want {
		return 0, fmt.Errorf("the plugin refused %d of %d lines, want %d", rejected, k, want)
	}
	return float64(k) / time.Since(start).Seconds(), nil
}

// pages reads the primary's published ban-list pages from its own relay
// as any reader does (readPages) and reports the largest, in bytes and tags.
func (bb *banBench) pages(n int, label func(string) string) ([]row, error) {
	issuer, err := bb.issuer()
	if err != nil {
		return nil, err
	}
	size, tags, pages := 0, 0, 0
	_, err = bb.readPages(issuer, func(ev *nostr.Event) {
		b, _ := json.Marshal(ev)
		size, tags, pages = max(size, len(b)), max(tags, len(ev.Tags)), pages+1
	})
	if err != nil {
		return nil, err
	}
	return []row{{measure: label("largest ban-list page the service key published (bytes, tags; of every page a reader reads)"),
		value: fmt.Sprintf("%.1f KB, %d tags (%d pages)", float64(size)/1000, tags, pages), target: "< 60 KB, < 1,000 tags", holds: ptr(size < 60_000 && tags < 1000)}}, nil
}

// readPages reads the ban list the issuer publishes from the primary's
// relay as any reader does (publish.ReadList: by d, 100 pages a filter,
// since a filter's limit is clamped to 500), and shows each page read to
// seen.
func (bb *banBench) readPages(issuer string, seen func(*nostr.Event)) (publish.List, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := nostr.RelayConnect(ctx, bb.srv.ws())
	if err != nil {
		return publish.List{}, err
	}
	defer r.Close()
	return publish.ReadList(ctx, func(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
		evs, err := r.QuerySync(ctx, f)
		for _, ev := range evs {
			seen(ev)
		}
		return evs, err
	}, issuer)
}

// issuer is the primary's service key, from the first page.
func (bb *banBench) issuer() (string, error) {
	body, _, err := fetch(bb.srv.url + "/banlist/blocked/pubkeys?limit=1")
	var p struct {
		ServicePubKey string `json:"service_pubkey"`
	}
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	return p.ServicePubKey, err
}

// burst bans burstSize keys in batches of 1,000 spread over its time,
// while a note is published every 10 ms; then it times the primary's CPU
// back to idle.
func (bb *banBench) burst() ([]row, error) {
	total, over := burstSize(bb.b.smoke)
	step(fmt.Sprintf("a burst of %s bans over %s", thousands(total), over))
	// The wave's keys are made first, as load's are: making a batch's
	// (on-curve keys) took a core of this process for tens of ms each
	// time, beside the publisher whose latency is measured.
	batches := total / 1000
	bodies, keys := make([][]byte, batches), make([][]string, batches)
	for i := range bodies {
		bodies[i], keys[i] = bb.newBans(1000)
	}
	idle, err := bb.publishLatencies(bb.idleWindow())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type published struct {
		lat []time.Duration
		err error
	}
	during := make(chan published, 1)
	profiled := bb.profile("burst", over)
	defer profiled()
	go func() { lat, err := publishPaced(ctx, bb.srv.ws()); during <- published{lat, err} }()
	tick := time.NewTicker(over / time.Duration(batches))
	for i := range batches {
		<-tick.C
		if err := bb.post(bodies[i]); err != nil {
			tick.Stop()
			return nil, err
		}
		bb.banned = append(bb.banned, keys[i]...)
		if i == batches/2 {
			bb.heap("burst-middle") // with -cpuprofile: what the wave holds live
		}
	}
	tick.Stop()
	last := time.Now()
	cancel()
	d := <-during
	if d.err != nil {
		return nil, d.err
	}
	calm, err := bb.calm(last)
	if err != nil {
		return nil, err
	}
	current, err := bb.pagesCurrent(last)
	if err != nil {
		return nil, err
	}
	i99, b99 := percentile(idle, 99), percentile(d.lat, 99)
	return []row{
		{measure: "burst: the published pages name every ban, after the last one (read as a reader does, every 2 s)", value: current.Round(100 * time.Millisecond).String()},
		{measure: fmt.Sprintf("burst of %s bans in %s: publish OK p99 (a note every 10 ms)", thousands(total), over), value: msText(millis(b99)),
			baseline: msText(millis(i99)) + " (idle, just before)", ratio: float64(b99) / float64(i99), target: "≤ 2×", holds: ptr(b99 <= 2*i99)},
		{measure: "burst: CPU back to idle (< 10% of a core for a second) after the last ban", value: calm.Round(100 * time.Millisecond).String(),
			target: "≤ 10 s", holds: ptr(calm <= 10*time.Second)},
	}, nil
}

// pagesCurrent is how long after since the ban-list pages on the primary's
// relay first name every key banned (at most five minutes): a wave's pages
// are republished at a pace (package publish), behind the list itself.
func (bb *banBench) pagesCurrent(since time.Time) (time.Duration, error) {
	issuer, err := bb.issuer()
	if err != nil {
		return 0, err
	}
	want := make(map[string]bool, len(bb.banned))
	for _, k := range bb.banned {
		want[k] = true
	}
	for time.Since(since) < 5*time.Minute {
		at := time.Now()
		l, err := bb.readPages(issuer, func(*nostr.Event) {})
		if err != nil {
			return 0, err
		}
		held := 0
		for _, t := range l.Bans {
			if len(t) >= 2 && want[t[1]] {
				held++
			}
		}
		if held == len(want) {
			return at.Sub(since), nil
		}
		time.Sleep(2 * time.Second)
	}
	return 0, fmt.Errorf("the pages still lacked bans five minutes after the burst")
}

func (bb *banBench) publishLatencies(d time.Duration) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return publishPaced(ctx, bb.srv.ws())
}

// calm is how long after since the primary's CPU use first falls under
// 10% of a core over a second (at most a minute).
func (bb *banBench) calm(since time.Time) (time.Duration, error) {
	pid := bb.srv.cmd.Process.Pid
	prev, at := cpuTicks(pid), time.Now()
	for time.Since(since) < time.Minute {
		time.Sleep(time.Second)
		now, t := cpuTicks(pid), time.Now()
		// Clock ticks are hundredths of a second: 10 of them a second is 10%.
		if float64(now-prev)/t.Sub(at).Seconds() < 10 {
			return at.Sub(since), nil
		}
		prev, at = now, t
	}
	return 0, fmt.Errorf("the primary was still busy a minute after the burst")
}

// startText is a start's wall time with the CPU time it took: on a shared
// machine the first says more of the others than of the process.
func startText(took, cpu time.Duration) string {
	return fmt.Sprintf("%s (CPU %s)", took.Round(time.Millisecond), cpu.Round(10*time.Millisecond))
}

// cpuTime is the user and system CPU time pid has used.
func cpuTime(pid int) time.Duration { return time.Duration(cpuTicks(pid)) * 10 * time.Millisecond }

// cpuTicks is the user and system CPU time of pid, in clock ticks.
func cpuTicks(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// The command name may hold spaces: the fields counted from after it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
