package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// strfryBinary finds the strfry of shared/tools (STRFRY names another), or
// skips the test, saying why.
func strfryBinary(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("STRFRY")}
	for up := "."; len(up) < 40; up = filepath.Join(up, "..") {
		candidates = append(candidates, filepath.Join(up, "shared", "tools", "strfry", "strfry"))
	}
	if p, err := exec.LookPath("strfry"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if !fileExists(c) {
			continue
		}
		// Its install script (beside it in shared/tools) adds the
		// libraries it needs, as its run-relay does before it starts.
		if install := filepath.Join(filepath.Dir(c), "install"); fileExists(install) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			out, err := exec.CommandContext(ctx, install).CombinedOutput()
			cancel()
			if err != nil {
				t.Skipf("strfry at %s cannot run: %s failed: %v: %s", c, install, err, out)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, c, "--help").CombinedOutput()
		cancel()
		if err != nil {
			t.Skipf("strfry at %s does not run: %v: %s", c, err, out)
		}
		abs, _ := filepath.Abs(c)
		return abs
	}
	t.Skip("no strfry binary (shared/tools/strfry/strfry, or STRFRY=path): the round trip with strfry is not tested")
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// strfryDB is a strfry LMDB database in a directory of its own, with a
// strfry.conf from shared/tools/strfry's template serving it on a free
// loopback port, with plugin (an absolute path; "": none) as its write
// policy.
type strfryDB struct {
	bin, conf string
	port      int
}

func newStrfryDB(t *testing.T, bin, plugin string) *strfryDB {
	t.Helper()
	dir := t.TempDir()
	tmpl, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "strfry.conf.tmpl"))
	if err != nil {
		t.Skipf("no strfry.conf.tmpl beside %s: %v", bin, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	os.MkdirAll(filepath.Join(dir, "db"), 0o700)
	conf := strings.NewReplacer("@DB@", filepath.Join(dir, "db")+"/", "@PORT@", fmt.Sprint(port), "@PLUGIN@", plugin).Replace(string(tmpl))
	path := filepath.Join(dir, "strfry.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return &strfryDB{bin: bin, conf: path, port: port}
}

// run runs a strfry command on the database, stdin from file if not "".
func (s *strfryDB) run(t *testing.T, stdin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"--config=" + s.conf}, args...)...)
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("strfry %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

var strfryStarted = regexp.MustCompile(`Started websocket server on`)

// serve runs strfry's relay on the database until the test ends and
// returns its websocket URL.
func (s *strfryDB) serve(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(s.bin, "--config="+s.conf, "relay")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strfryStarted.Match(sc.Bytes()) {
				started <- true
			}
		}
		started <- false
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Fatal("strfry relay ended before it listened")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("strfry relay did not start")
	}
	return fmt.Sprintf("ws://127.0.0.1:%d", s.port)
}

// TestStrfryRoundTrip moves a relay's events from strfry to outpost and
// back, through strfry export, outpost import, outpost export and strfry
// import, and asks the same REQs and COUNTs of each relay over websocket.
func TestStrfryRoundTrip(t *testing.T) {
	t.Parallel()
	bin := strfryBinary(t)
	tmp := t.TempDir()
	n := 3000
	if testing.Short() {
		n = 1000 // ten rounds of the mix's hundred, every kind and deletion in each
	}
	generated, evs := writeMixed(t, tmp, n, false)

	from := newStrfryDB(t, bin, "")
	from.run(t, generated, "import")
	fromStrfry := filepath.Join(tmp, "strfry-export.jsonl")
	os.WriteFile(fromStrfry, from.run(t, "", "export"), 0o600)

	dir := t.TempDir()
	env := map[string]string{"OUTPOST_DATA_DIR": dir}
	if _, stderr, err := imp(t, env, "import", fromStrfry); err != nil || parseSummary(t, stderr).rejected != 0 {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	fromOutpost := filepath.Join(tmp, "outpost-export.jsonl")
	if _, stderr, err := imp(t, env, "export", "--output", fromOutpost); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	back := newStrfryDB(t, bin, "")
	back.run(t, fromOutpost, "import")

	inst := start(t, dir, nil)
	outpost, _ := relaytest.Dial(t, inst.ws)
	filters := roundTripFilters(evs)
	var profiles []nostr.Event
	for _, ev := range evs {
		if ev.Kind == 0 {
			profiles = append(profiles, ev)
		}
	}
	if n, want := len(ids(t, outpost, filters[0])), len(authors(profiles)); n != want {
		t.Errorf("%d profiles, want the newest of each of %d authors'", n, want)
	}
	if n := len(ids(t, outpost, filters[len(filters)-1])); n != 0 {
		t.Errorf("%d deleted events served", n)
	}
	for name, db := range map[string]*strfryDB{"strfry before": from, "strfry after": back} {
		other, _ := relaytest.Dial(t, db.serve(t))
		for _, f := range filters {
			if a, b := ids(t, outpost, f), ids(t, other, f); !slices.Equal(a, b) {
				t.Errorf("%v: outpost has %d events, %s %d", f, len(a), name, len(b))
			}
		}
		// Every event of the mix's authors: outpost publishes some of its own.
		for _, f := range []nostr.Filter{{Authors: authors(evs)}, {Kinds: []int{1}}, {Kinds: []int{7}}} {
			if a, b := count(t, outpost, f), count(t, other, f); a != b || a == 0 {
				t.Errorf("COUNT %v: outpost %d, %s %d", f, a, name, b)
			}
		}
	}
}

// roundTripFilters are REQs of each kind of the mix, each answered in full
// (under the relays' limit of 500).
func roundTripFilters(evs []nostr.Event) []nostr.Filter {
	var deleted []string
	for _, ev := range evs {
		if ev.Kind == 5 && ev.Tags[0][0] == "e" {
			deleted = append(deleted, ev.Tags[0][1])
		}
	}
	author := evs[7].PubKey
	return []nostr.Filter{
		{Kinds: []int{0}}, {Kinds: []int{3}}, {Kinds: []int{30023}}, {Kinds: []int{5}},
		{Kinds: []int{1}, Authors: []string{author}}, {Kinds: []int{1, 7}, Limit: 300},
		{Tags: nostr.TagMap{"t": {"test"}}}, {Tags: nostr.TagMap{"d": {"article-2"}}},
		{IDs: deleted[:min(len(deleted), 100)]},
	}
}

// ids are the ids of the events a relay answers f with, sorted. The wait
// is long: under -race, on a loaded machine, a REQ of 500 events takes
// seconds.
func ids(t *testing.T, r *nostr.Relay, f nostr.Filter) []string {
	t.Helper()
	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Minute, errors.New("no EOSE"))
	defer cancel()
	evs, err := r.QuerySync(ctx, f)
	if err != nil || ctx.Err() != nil {
		t.Fatalf("REQ %v of %s: %v, %v", f, r.URL, err, context.Cause(ctx))
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	slices.Sort(out)
	return out
}

func count(t *testing.T, r *nostr.Relay, f nostr.Filter) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, _, err := r.Count(ctx, nostr.Filters{f})
	if err != nil {
		t.Fatalf("COUNT %v: %v", f, err)
	}
	return n
}

func authors(evs []nostr.Event) []string {
	var out []string
	for _, ev := range evs {
		if !slices.Contains(out, ev.PubKey) {
			out = append(out, ev.PubKey)
		}
	}
	return out
}
