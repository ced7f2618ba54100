package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// strfry's rows sit next to bare khatru's, the same figures with the ratio
// outpost ÷ strfry and no targets (issue 16's targets are against khatru);
// outpost at an earlier revision keeps its own shorter set.
func TestReadRowsAgainstStrfry(t *testing.T) {
	b := &bench{sizes: full}
	load := func(ms, perSec float64) map[string][]loadResult {
		r := []loadResult{{P50ms: ms, P99ms: 2 * ms, PerSec: perSec}}
		return map[string][]loadResult{"kinds": r, "author": r}
	}
	relay := func(name string, ms, perSec float64) *reader {
		return &reader{name: name, lat: load(ms, perSec), tput: load(ms, perSec), ingest: ingestResult{PerSec: perSec},
			afterIngest: mem{RSS: 100e6}, afterLoad: []mem{{RSS: 100e6}}, disk: 1e6}
	}
	rs := []*reader{relay("outpost", 4, 400), relay("bare khatru", 12, 200), relay("strfry", 2, 800), relay("outpost 13d3e47", 8, 300)}
	rs[2].foreign, rs[3].earlier = true, true
	rows := b.readRows(rs, "author")
	by := map[string][]row{}
	for _, rw := range rows {
		i := strings.LastIndex(rw.baseline, "(")
		by[rw.baseline[i:]] = append(by[rw.baseline[i:]], rw)
	}
	khatru, strfry := by["(bare khatru)"], by["(strfry)"]
	if len(khatru) == 0 || len(strfry) != len(khatru) || len(by["(outpost 13d3e47)"]) == 0 {
		t.Fatalf("rows by baseline: %d khatru, %d strfry, %d earlier", len(khatru), len(strfry), len(by["(outpost 13d3e47)"]))
	}
	for i, rw := range strfry {
		if rw.measure != khatru[i].measure || rw.target != "" || rw.holds != nil {
			t.Errorf("strfry row %d: %+v, khatru's: %+v", i, rw, khatru[i])
		}
	}
	if strfry[0].measure != "REQ "+`{"kinds":[1],"limit":500}`+", p50 (1 connection)" || strfry[0].ratio != 2 || khatru[0].target == "" {
		t.Errorf("first rows: %+v / %+v", strfry[0], khatru[0])
	}
}

// strfry says where it listens on stderr, in a log line of its own.
func TestLaunchFindsTheAddressOnStderr(t *testing.T) {
	cmd := exec.Command("sh", "-c", `echo "2026-01-01 (0.1s) [main thread]INFO| Started websocket server on 127.0.0.1:7777" >&2; exec sleep 60`)
	srv, err := launch(cmd, strfryServing, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	if srv.ws() != "ws://127.0.0.1:7777" {
		t.Fatalf("url %s", srv.url)
	}
}

// A server that exits before it serves (a bad strfry.conf, say) fails at
// once with its output, not after the two-minute wait.
func TestLaunchFailsWhenTheServerExits(t *testing.T) {
	start := time.Now()
	for _, onStderr := range []bool{false, true} {
		_, err := launch(exec.Command("sh", "-c", "echo bad config >&2; exit 3"), strfryServing, onStderr)
		if err == nil || !strings.Contains(err.Error(), "bad config") {
			t.Fatalf("onStderr=%v: %v", onStderr, err)
		}
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("took %s", took)
	}
}
