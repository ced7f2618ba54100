package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

// exported parses export's output: each line one signed event.
func exported(t *testing.T, out string) []nostr.Event {
	t.Helper()
	var evs []nostr.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev nostr.Event
		if err := ev.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if ok, err := ev.CheckSignature(); !ok || !ev.CheckID() {
			t.Fatalf("exported event does not verify (%v): %s", err, sc.Text())
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestExportFilters: export answers its filter, given as JSON, as flags
// or both, to stdout or a file; a banned author's events stay out.
func TestExportFilters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file, evs := writeMixed(t, t.TempDir(), 500, false)
	env := map[string]string{"OUTPOST_DATA_DIR": dir}
	if _, stderr, err := imp(t, env, "import", file); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	author := evs[0].PubKey
	npub, _ := nip19.EncodePublicKey(author)
	all := func(keep func(nostr.Event) bool) int {
		out, _, err := imp(t, env, "export")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range exported(t, out) {
			if keep(ev) {
				n++
			}
		}
		return n
	}
	since, until := evs[100].CreatedAt, evs[300].CreatedAt
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--kinds", "0,3"}, all(func(ev nostr.Event) bool { return ev.Kind == 0 || ev.Kind == 3 })},
		{[]string{`{"kinds":[1]}`, "--authors", npub}, all(func(ev nostr.Event) bool { return ev.Kind == 1 && ev.PubKey == author })},
		{[]string{"--since", fmt.Sprint(since), "--until", fmt.Sprint(until)}, all(func(ev nostr.Event) bool { return ev.CreatedAt >= since && ev.CreatedAt <= until })},
		{[]string{`{"kinds":[1,7]}`, "--limit", "7"}, 7},
	} {
		out, stderr, err := cli(t, env, append([]string{"export"}, c.args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr)
		}
		if got := len(exported(t, out)); got != c.want || got == 0 {
			t.Errorf("%v: %d events, want %d", c.args, got, c.want)
		}
	}

	path := filepath.Join(t.TempDir(), "out.jsonl")
	if _, ban, err := cli(t, env, "ban", "add", npub, "--reason", "spam"); err != nil {
		t.Fatalf("%v\n%s", err, ban)
	}
	if _, stderr, err := imp(t, env, "export", "--output", path); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	data, _ := os.ReadFile(path)
	for _, ev := range exported(t, string(data)) {
		if ev.PubKey == author {
			t.Fatal("a banned author's event exported")
		}
	}
	for _, bad := range [][]string{{"--kinds", "x"}, {"--authors", "npub1nope"}, {"{not json"}, {"--limit", "-1"}, {"{}", "{}"}, {`{"search":"x"}`}} {
		if _, _, err := cli(t, env, append([]string{"export"}, bad...)...); err == nil {
			t.Errorf("export %v: no error", bad)
		}
	}
}

// TestImportExportRefuseARunningOutpost: with the data dir's database held
// by another process (a running outpost), import and export stop before
// reading or writing anything, and say so.
func TestImportExportRefuseARunningOutpost(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	st, err := store.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the subtests, which run once this returns
	file, _ := writeMixed(t, t.TempDir(), 10, false)
	env := map[string]string{"OUTPOST_DATA_DIR": dir}
	// Side by side: each waits out the store's lock wait (3 s) before it
	// is refused.
	for _, args := range [][]string{{"import", file}, {"export"}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			_, _, err := cli(t, env, args...)
			if err == nil || !strings.Contains(err.Error(), "an outpost is running on") {
				t.Errorf("%s: %v", args[0], err)
			}
		})
	}
}

// TestImportExportHelp: --help prints the usage on stdout, with the twins.
func TestImportExportHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"import", "export"} {
		out, _, err := cli(t, nil, cmd, "--help")
		if err != nil || !strings.Contains(out, "usage: outpost "+cmd) || !strings.Contains(out, "[OUTPOST_DATA_DIR]") {
			t.Errorf("%s --help: %v\n%s", cmd, err, out)
		}
	}
}
