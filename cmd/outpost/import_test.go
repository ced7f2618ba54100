package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/relay"
)

// writeMixed writes MixedEvents(n) as JSONL to a file in dir, newest
// first if reversed.
func writeMixed(t *testing.T, dir string, n int, reversed bool) (string, []nostr.Event) {
	t.Helper()
	var b bytes.Buffer
	var evs []nostr.Event
	testkit.MixedEvents(n, nostr.Now()-60, func(ev nostr.Event) bool {
		evs = append(evs, ev)
		return true
	})
	if reversed {
		slices.Reverse(evs)
	}
	for _, ev := range evs {
		line, _ := json.Marshal(ev)
		b.Write(append(line, '\n'))
	}
	path := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, evs
}

// imp runs outpost import (or export) as cli does, but with minutes to
// finish rather than cli's 20 seconds: thousands of events under -race on a
// loaded machine take longer, and an import whose context ends stops as if
// interrupted.
func imp(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	if strings.Contains(errOut.String(), "interrupted after line") {
		t.Fatalf("%v did not finish in time:\n%s", args, errOut.String())
	}
	return out.String(), errOut.String(), err
}

// summaryCounts reads the numbers of an import's summary line.
var summaryRE = regexp.MustCompile(`(\d+) lines, (\d+) events read, (\d+) stored, (\d+) duplicates, (\d+) superseded, (\d+) rejected.*, (\d+) bad lines`)

type counts struct{ lines, read, stored, duplicates, superseded, rejected, bad int }

func parseSummary(t *testing.T, stderr string) counts {
	t.Helper()
	m := summaryRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary line in %q", stderr)
	}
	n := make([]int, 7)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return counts{n[0], n[1], n[2], n[3], n[4], n[5], n[6]}
}

// TestImportTwiceStoresOnce imports a file, newest first (so older
// versions of an address are superseded, and deletion requests come before
// what they delete), then the same file again: the second run stores
// nothing.
func TestImportTwiceStoresOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file, evs := writeMixed(t, t.TempDir(), 600, true)
	env := map[string]string{"OUTPOST_DATA_DIR": dir}
	_, stderr, err := imp(t, env, "import", file, "--batch", "64")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	first := parseSummary(t, stderr)
	if first.read != len(evs) || first.rejected == 0 || first.bad != 0 || first.superseded == 0 || first.stored+first.superseded+first.rejected != len(evs) {
		t.Fatalf("first import: %+v\n%s", first, stderr)
	}
	if want := fmt.Sprintf("%d %q", first.rejected, "blocked: this event was deleted by its author"); !strings.Contains(stderr, want) {
		t.Fatalf("refused for something else than being deleted:\n%s", stderr)
	}
	_, stderr, err = imp(t, env, "import", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	again := parseSummary(t, stderr)
	if again.stored != 0 || again.rejected != first.rejected || again.duplicates != first.stored {
		t.Fatalf("second import: %+v after %+v\n%s", again, first, stderr)
	}
}

// TestImportCountsBadLines: lines that are not events are counted with
// their numbers and skipped; refused events are counted by reason; with
// --strict the first bad line stops the import before its batch.
func TestImportCountsBadLines(t *testing.T) {
	t.Parallel()
	sk := nostr.GeneratePrivateKey()
	good := func(content string) string {
		ev := nostr.Event{CreatedAt: nostr.Now() - 10, Kind: 1, Tags: nostr.Tags{}, Content: content}
		ev.Sign(sk)
		b, _ := json.Marshal(ev)
		return string(b)
	}
	forged := good("forged")
	forged = strings.Replace(forged, `"content":"forged"`, `"content":"changed"`, 1)
	badSig := good("bad sig")
	var evBad nostr.Event
	json.Unmarshal([]byte(badSig), &evBad)
	evBad.Sig = strings.Repeat("0", 128)
	b, _ := json.Marshal(evBad)
	lines := []string{good("one"), "not json", "", forged, string(b), `{"kind":1}`, good("two"), strings.Repeat("x", 300<<10), good("three")}
	file := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600) // no newline at the end
	dir := t.TempDir()
	_, stderr, err := imp(t, map[string]string{"OUTPOST_DATA_DIR": dir}, "import", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	c := parseSummary(t, stderr)
	if c != (counts{lines: 9, read: 6, stored: 3, rejected: 3, bad: 2}) {
		t.Errorf("counts %+v\n%s", c, stderr)
	}
	for _, want := range []string{`line 2: "invalid: not JSON"`, `line 8: "invalid: the line is over max_message_length"`,
		`"invalid: the id is not the hash of the event"`, `"invalid: the signature does not verify"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("summary without %s:\n%s", want, stderr)
		}
	}

	strict := t.TempDir()
	_, stderr, err = imp(t, map[string]string{"OUTPOST_DATA_DIR": strict}, "import", "--strict", file, "--batch", "1")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("--strict: %v\n%s", err, stderr)
	}
	if c := parseSummary(t, stderr); c.stored != 1 || c.lines != 1 {
		t.Errorf("--strict stored what came after the bad line: %+v\n%s", c, stderr)
	}
}

// TestImportInterrupted: an import whose context ends (SIGINT) while its
// input has more to come stops, says so and returns no error; run again,
// it stores the rest: the two runs together store what one would.
func TestImportInterrupted(t *testing.T) {
	t.Parallel()
	file, _ := writeMixed(t, t.TempDir(), 400, false)
	data, _ := os.ReadFile(file)
	dir := t.TempDir()
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr testkit.LogBuffer
	go func() {
		done <- run(ctx, []string{"import", "--batch", "10"}, testEnv(dir, nil), pr, &bytes.Buffer{}, &stderr)
	}()
	// The input stops after 100 lines, the import waiting for more.
	if _, err := pw.Write(data[:nthLine(data, 100)]); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the import did not end when interrupted")
	}
	first := parseSummary(t, stderr.String())
	if !strings.Contains(stderr.String(), "interrupted") || first.lines > 100 {
		t.Fatalf("%+v\n%s", first, stderr.String())
	}
	env := map[string]string{"OUTPOST_DATA_DIR": dir}
	_, out, err := imp(t, env, "import", file)
	if err != nil {
		t.Fatal(err)
	}
	second := parseSummary(t, out)
	_, out, err = imp(t, map[string]string{"OUTPOST_DATA_DIR": t.TempDir()}, "import", file)
	if err != nil {
		t.Fatal(err)
	}
	if whole := parseSummary(t, out); first.stored+second.stored != whole.stored || second.read != whole.read {
		t.Fatalf("interrupted %+v, then %+v; at once %+v", first, second, whole)
	}
}

func nthLine(data []byte, n int) int {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	at := 0
	for i := 0; i < n && sc.Scan(); i++ {
		at += len(sc.Bytes()) + 1
	}
	return at
}

// TestBadLinesEndBatches: a file of nothing but bad lines is read in
// batches like any other, so that they never pile up in memory.
func TestBadLinesEndBatches(t *testing.T) {
	t.Parallel()
	db, err := openOffline("import", newDataDir(t), offlineStore(), relay.DefaultLimits(), func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out, done := make(chan lineBatch), make(chan struct{})
	defer close(done)
	go readBatches(strings.NewReader(strings.Repeat("not an event\n", 1000)), db.rl, 1<<16, 10, out, done)
	for n := 1; ; n++ {
		b := <-out
		if len(b.bad) > 10 {
			t.Fatalf("batch %d holds %d bad lines", n, len(b.bad))
		}
		if b.last {
			return
		}
	}
}

// TestImportProtected: a protected event (NIP-70) is refused as from a
// relay, and kept with --protected.
func TestImportProtected(t *testing.T) {
	t.Parallel()
	ev := nostr.Event{CreatedAt: nostr.Now() - 10, Kind: 1, Tags: nostr.Tags{{"-"}}, Content: "protected"}
	ev.Sign(nostr.GeneratePrivateKey())
	line, _ := json.Marshal(ev)
	file := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(file, append(line, '\n'), 0o600)
	env := map[string]string{"OUTPOST_DATA_DIR": t.TempDir()}
	for _, c := range []struct {
		args             []string
		stored, rejected int
	}{{[]string{"import", file}, 0, 1}, {[]string{"import", file, "--protected"}, 1, 0}} {
		_, stderr, err := cli(t, env, c.args...)
		if got := parseSummary(t, stderr); err != nil || got.stored != c.stored || got.rejected != c.rejected {
			t.Errorf("%v: %v, %+v\n%s", c.args, err, got, stderr)
		}
	}
}

// TestImportOnAFullDisk: with the disk down to the free space the store
// keeps (OUTPOST_MIN_FREE_SPACE, as serve reads it), an import stops with
// the store's reason and writes nothing; with room again, it stores all.
func TestImportOnAFullDisk(t *testing.T) {
	t.Parallel()
	disk := testkit.NewFullDisk(t)
	env := map[string]string{"OUTPOST_DATA_DIR": filepath.Join(disk.Dir, "data"), "OUTPOST_MIN_FREE_SPACE": disk.Min.String()}
	first, _ := writeMixed(t, t.TempDir(), 100, false)
	if _, stderr, err := imp(t, env, "import", first); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	before := exportAll(t, env["OUTPOST_DATA_DIR"], env)
	filler := testkit.Fill(t, disk.Dir, int64(disk.Min)-4<<20)
	second, evs := writeMixed(t, t.TempDir(), 300, true)
	_, stderr, err := imp(t, env, "import", second)
	if err == nil || !strings.Contains(err.Error(), "low on disk space") {
		t.Fatalf("on a full disk: %v\n%s", err, stderr)
	}
	os.Remove(filler)
	if exportAll(t, env["OUTPOST_DATA_DIR"], env) != before {
		t.Fatal("the refused import wrote events")
	}
	_, stderr, err = imp(t, env, "import", second)
	if c := parseSummary(t, stderr); err != nil || c.read != len(evs) || c.stored == 0 {
		t.Fatalf("with room again: %v, %+v\n%s", err, c, stderr)
	}
}
