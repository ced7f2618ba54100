package strfry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/policies"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func hexKey(i int) string { return fmt.Sprintf("%064x", i+1) }

// state is what a list holds, for comparing: its bans and words.
func state(l *policies.BanList) string {
	bans, _ := l.Bans(0)
	return fmt.Sprint(bans, l.Words())
}

func mustOpen(t *testing.T, l *policies.BanList, path string) (*cacheFile, bool) {
	t.Helper()
	c, found, err := openCache(l, path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, found
}

// TestCacheAppendsChanges: a change adds its own line to the cache file,
// not the list again, and the file read back is the list, temporary bans
// with their expiry, lifted bans gone, words as last set. (Before, every
// change wrote the whole list anew: 100 MB a change at a million bans.)
func TestCacheAppendsChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "cache")
	l := policies.NewBanList()
	c, found := mustOpen(t, l, path)
	if found {
		t.Fatal("a new cache found")
	}
	c.BeginBans()
	page := make([]policies.Ban, 3000)
	for i := range page {
		page[i] = policies.Ban{PubKey: hexKey(i), Reason: "wave"}
	}
	c.PutBans(page)
	c.EndBans() // compacted: the whole list
	c.SetWords([]string{"scam"})
	whole := read(t, path)

	c.Ban(policies.Ban{PubKey: hexKey(5000), Reason: "late", ExpiresAt: 4_000_000_000})
	c.Unban(hexKey(7))
	if now := read(t, path); !bytes.HasPrefix(now, whole) || len(now)-len(whole) > 300 {
		t.Fatalf("a ban and an unban made the cache %d bytes from %d, not by appending to it: it is written whole", len(now), len(whole))
	}
	back := policies.NewBanList()
	if found, err := LoadCache(back, path); !found || err != nil {
		t.Fatalf("load: %v %v", found, err)
	}
	if state(back) != state(l) {
		t.Fatal("the cache read back is not the list")
	}
	if b, ok := back.Banned(hexKey(5000), 1); !ok || b.ExpiresAt != 4_000_000_000 || b.Reason != "late" {
		t.Fatalf("a temporary ban after a round trip: %+v", b)
	}
	if found, err := LoadCache(back, filepath.Join(t.TempDir(), "none")); found || err != nil {
		t.Fatalf("a missing cache: %v %v", found, err)
	}
}

// TestCacheCompacts: a log of changes is written anew, as the list, once
// its lines outnumber the bans: many changes of few bans do not grow it.
func TestCacheCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache")
	l := policies.NewBanList()
	c, _ := mustOpen(t, l, path)
	for i := range 5 * loadBatch {
		c.Ban(policies.Ban{PubKey: hexKey(i % 10), Reason: fmt.Sprint(i)})
	}
	if n := bytes.Count(read(t, path), []byte("\n")); n > 2*loadBatch {
		t.Fatalf("%d lines for 10 bans changed %d times: never compacted", n, 5*loadBatch)
	}
	back := policies.NewBanList()
	LoadCache(back, path)
	if state(back) != state(l) {
		t.Fatal("the compacted cache is not the list")
	}
}

// TestCacheTornAnywhere: a kill -9 leaves the cache file cut at any byte
// of its last write. Cut at every byte, it loads as the list after some
// whole prefix of its changes, never as an error or something else; and
// the next change, appended after the cut, loads too. (A torn tail glued
// to the next line would lose both.)
func TestCacheTornAnywhere(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache")
	l := policies.NewBanList()
	c, _ := mustOpen(t, l, path)
	c.SetWords([]string{"scam"})
	states := []string{state(l)}
	sizes := []int64{size(t, path)}
	changes := []func(){
		func() { c.Ban(policies.Ban{PubKey: hexKey(1), Reason: "spam \"quoted\" ✓"}) },
		func() { c.Ban(policies.Ban{PubKey: hexKey(2), ExpiresAt: 4_000_000_000}) },
		func() { c.Unban(hexKey(1)) },
		func() { c.SetWords([]string{"scam", "free money"}) },
		func() { c.SetWords([]string{}) },
	}
	for _, change := range changes {
		change()
		states = append(states, state(l))
		sizes = append(sizes, size(t, path))
	}
	c.Close()
	full := read(t, path)
	for cut := range len(full) + 1 {
		torn := filepath.Join(dir, fmt.Sprint("torn", cut))
		if err := os.WriteFile(torn, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		back := policies.NewBanList()
		c2, _, err := openCache(back, torn, quiet)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		i := 0
		for i+1 < len(sizes) && sizes[i+1] <= int64(cut) {
			i++
		}
		if cut >= int(sizes[0]) && state(back) != states[i] {
			t.Fatalf("cut at %d of %d: loads as %s, want the list after %d changes, %s", cut, len(full), state(back), i, states[i])
		}
		c2.Ban(policies.Ban{PubKey: hexKey(9), Reason: "after"})
		c2.Close()
		again := policies.NewBanList()
		if LoadCache(again, torn); state(again) != state(back) {
			t.Fatalf("cut at %d: the change appended after the cut is lost", cut)
		}
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCacheSurvivesKill9: a process that changes its list without end,
// appending to the cache file and compacting it again and again, is
// killed with SIGKILL at whatever moment; every time, the cache it leaves
// loads, as the list after some whole prefix of its changes.
func TestCacheSurvivesKill9(t *testing.T) {
	if path := os.Getenv("OUTPOST_CACHE_CHILD"); path != "" {
		churn(path)
		return
	}
	if testing.Short() {
		t.Skip("-short: TestCacheTornAnywhere cuts the file at every byte instead")
	}
	path := filepath.Join(t.TempDir(), "cache")
	for round := range 8 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCacheSurvivesKill9$")
		cmd.Env = append(os.Environ(), "OUTPOST_CACHE_CHILD="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		start := int64(0)
		if fi, err := os.Stat(path); err == nil {
			start = fi.Size()
		}
		// Killed once it has written a little more, at a moment the
		// round's number shifts: mid-append or mid-compaction.
		testkit.WaitFor(t, 30*time.Second, "the child to write", func() bool {
			fi, err := os.Stat(path)
			return err == nil && fi.Size() != start
		})
		time.Sleep(time.Duration(round) * 13 * time.Millisecond) // each round kills at another instant
		cmd.Process.Kill()
		cmd.Wait()
		cancel()
		back := policies.NewBanList()
		if found, err := LoadCache(back, path); !found || err != nil {
			t.Fatalf("round %d: after kill -9 the cache loads as found=%v err=%v", round, found, err)
		}
		for i := range churnKeys {
			if _, ok := back.Banned(hexKey(i), 0); !ok {
				t.Fatalf("round %d: after kill -9 the cache lacks a ban it always held", round)
			}
		}
	}
}

// churnKeys are the bans churn holds: enough that a compaction takes a
// while, so kills land in the middle of some.
const churnKeys = 20_000

// churn changes a list of churnKeys bans without end, in the cache file at
// path.
func churn(path string) {
	l := policies.NewBanList()
	c, _, err := openCache(l, path, quiet)
	if err != nil {
		os.Exit(2)
	}
	all := make([]policies.Ban, churnKeys)
	for i := range all {
		all[i] = policies.Ban{PubKey: hexKey(i), Reason: "all"}
	}
	c.BeginBans()
	c.PutBans(all)
	c.EndBans()
	for i := 0; ; i++ {
		c.Ban(policies.Ban{PubKey: hexKey(i % churnKeys), Reason: fmt.Sprint(i)})
	}
}

// The compaction's hand-made lines are what json.Encoder writes of a record.
func TestAppendBanIsTheRecordsJSON(t *testing.T) {
	reasons := map[string][]byte{}
	for _, b := range []policies.Ban{
		{PubKey: strings.Repeat("ab", 32), Reason: "spam wave"},
		{PubKey: strings.Repeat("cd", 32), Reason: "", ExpiresAt: 1_800_000_000},
		{PubKey: strings.Repeat("ef", 32), Reason: `quote " \ <b>&` + "\u2028 ünï", ExpiresAt: 7},
		{PubKey: strings.Repeat("01", 32), Reason: "spam wave"},
	} {
		want, _ := json.Marshal(record{Ban: b.PubKey, Why: b.Reason, Until: b.ExpiresAt})
		if got := string(appendBan(nil, b, reasons)); got != string(want)+"\n" {
			t.Fatalf("appendBan = %s, want %s", got, want)
		}
	}
}
