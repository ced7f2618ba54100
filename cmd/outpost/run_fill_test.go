package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// acked is what outpost acknowledged to the writers of TestDiskFilledFromOutside,
// and the first refusal of each kind.
type acked struct {
	mu       sync.Mutex
	events   []string // ids answered OK true
	words    []string // words answered 201
	evRefuse error    // the first event refused
	restCode int      // the first REST write refused
	restBody map[string]any
	refused  int // writes refused (or unanswered), of both kinds
}

// TestDiskFilledFromOutside fills outpost's filesystem (ext4, as in the
// report) from other processes (fallocate, then dd) in milliseconds while
// publishers and REST writers keep writing. Before badger's memtable logs
// were allocated ahead, the first write to a page of the log that had no
// block died of SIGBUS ("fatal error: fault" in badger's
// logFile.writeEntry), taking the relay and every service down (10 runs in
// 10). Now outpost stays up: writes are refused with the documented errors,
// reads are served, the disk reserve is let go, writes resume once space is
// freed, and nothing acknowledged is lost across a restart.
func TestDiskFilledFromOutside(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: seconds of writes against a disk filled from outside; kv's TestMemtableLogOnADiskFilledFromOutside covers the store's side")
	}
	dir := testkit.Ext4(t, 256)
	env := map[string]string{"OUTPOST_MIN_FREE_SPACE": "32MiB",
		"OUTPOST_RELAY_EVENTS_PER_MINUTE": "0", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE": "0"}
	c := startChild(t, dir, env)
	sk := nostr.GeneratePrivateKey()
	first := note(t, sk, "before the disk filled", 1)
	r0, p0 := relaytest.Dial(t, c.url)
	proxies := []*relaytest.Proxy{p0}
	// freeze keeps go-nostr's clients from hearing outpost go away (they
	// race with themselves when they do; see relaytest).
	freeze := func() {
		for _, p := range proxies {
			p.Freeze()
		}
	}
	if err := publish(t, r0, first); err != nil {
		t.Fatal(err)
	}

	testkit.WaitFor(t, 10*time.Second, "the disk reserve", func() bool {
		_, err := os.Stat(filepath.Join(dir, "disk-reserve"))
		return err == nil
	})
	var got acked
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 4 {
		r, p := relaytest.Dial(t, c.url)
		proxies = append(proxies, p)
		wg.Go(func() { publishUntil(ctx, t, r, sk, i, &got) })
	}
	for i := range 2 {
		wg.Go(func() { addWordsUntil(ctx, c.url, i, &got) })
	}
	// About 3 MB of notes: with what follows until writes stop, far less
	// than a memtable (16 MiB), so that badger flushes no table while the
	// disk fills. A table badger writes as the disk runs out can still
	// fault (see store.reserve); this test is about the memtable log.
	testkit.WaitFor(t, 30*time.Second, "100 notes", func() bool {
		got.mu.Lock()
		defer got.mu.Unlock()
		return len(got.events) >= 100
	})
	// With writes under way, the disk fills in milliseconds, as in the
	// report: faster than outpost can notice.
	fillers := testkit.FillFromOutside(t, dir)
	// Writes go on against the full disk: each writer refused ten times
	// over (a pause of 50 ms each), as outpost, had it died, would not.
	testkit.WaitFor(t, 30*time.Second, "writes refused on the full disk", func() bool {
		got.mu.Lock()
		defer got.mu.Unlock()
		return got.refused >= 60
	})
	stop()
	wg.Wait()
	if crashed(c) {
		freeze()
		t.Fatalf("outpost died while the disk filled:\n%s", crashReport(c.logs.String()))
	}
	got.mu.Lock()
	t.Logf("acknowledged %d events and %d words; refused: %v, %d %v", len(got.events), len(got.words), got.evRefuse, got.restCode, got.restBody)
	if got.evRefuse == nil || !strings.Contains(got.evRefuse.Error(), "error: ") || !strings.Contains(got.evRefuse.Error(), "disk space") {
		t.Errorf("event refused with %v, want an error: reason about disk space", got.evRefuse)
	}
	if got.restCode != http.StatusInsufficientStorage || got.restBody["error"] != "insufficient_storage" {
		t.Errorf("REST write refused with %d %v, want 507 insufficient_storage", got.restCode, got.restBody)
	}
	if !strings.Contains(c.logs.String(), "deleted the disk reserve") {
		t.Error("the disk reserve was not deleted once the disk was full")
	}
	events, words := got.events, got.words
	got.mu.Unlock()

	// Reads are served while the disk is full.
	if ids := eventIDs(query(t, r0, nostr.Filter{IDs: []string{first.ID}})); len(ids) != 1 {
		t.Errorf("the first note cannot be read on a full disk: %v", ids)
	}
	if code, body := call(t, "GET", c.url+"/banlist/blocked/words", nil); code != 200 || !containsAll(body["words"], words) {
		t.Errorf("GET /banlist/blocked/words on a full disk: %d, want every acknowledged word", code)
	}
	if _, h := call(t, "GET", c.url+"/health", nil); h["status"] != "degraded" {
		t.Errorf("/health on a full disk: %v, want degraded", h)
	}

	// Writes resume once the space is freed.
	for _, f := range fillers {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "writes to resume", func() bool {
		code, _ := call(t, "POST", c.url+"/banlist/admin/words", map[string]any{"word": "after-the-fill"}, admin()...)
		return code == 201
	})
	again := note(t, sk, "after the disk was freed", 1)
	if err := publish(t, r0, again); err != nil {
		t.Errorf("publishing after space was freed: %v", err)
	}
	freeze()
	c.stop(t)
	if crashed(c) && c.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("outpost exited with %v on SIGTERM:\n%s", c.cmd.ProcessState, tail(c.logs.String(), 3000))
	}

	// Nothing acknowledged was lost.
	c = startChild(t, dir, env)
	r, _ := relaytest.Dial(t, c.url)
	want := append(slices.Clone(events), first.ID, again.ID)
	var found []string
	for chunk := range slices.Chunk(want, 200) {
		found = append(found, eventIDs(query(t, r, nostr.Filter{IDs: chunk, Limit: len(chunk)}))...)
	}
	if missing := without(want, found); len(missing) > 0 {
		t.Errorf("%d of %d acknowledged events lost after the restart, e.g. %v", len(missing), len(want), missing[:1])
	}
	if code, body := call(t, "GET", c.url+"/banlist/blocked/words", nil); code != 200 || !containsAll(body["words"], append(words, "after-the-fill")) {
		t.Errorf("GET /banlist/blocked/words after the restart: %d, want every acknowledged word", code)
	}
}

// publishUntil publishes notes of 30 KB of random text (which badger cannot
// compress into less room) until ctx ends, recording what outpost says.
func publishUntil(ctx context.Context, t *testing.T, r *nostr.Relay, sk string, writer int, got *acked) {
	noise := make([]byte, 22_000)
	for i := 0; ctx.Err() == nil; i++ {
		rand.Read(noise)
		ev := note(t, sk, fmt.Sprint(writer, " ", i, " ", base64.StdEncoding.EncodeToString(noise)), 1)
		err := publish(t, r, ev)
		got.mu.Lock()
		if err == nil {
			got.events = append(got.events, ev.ID)
		} else {
			got.refused++
			if got.evRefuse == nil {
				got.evRefuse = err
			}
		}
		got.mu.Unlock()
		if err != nil {
			pause(ctx) // the disk is full: try again, a little later
		}
	}
}

// pause waits a little before a writer tries again, or until ctx ends.
func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(50 * time.Millisecond):
	}
}

// addWordsUntil adds blocked words (which no note contains: notes hold no
// "-") until ctx ends, recording what outpost says.
func addWordsUntil(ctx context.Context, url string, writer int, got *acked) {
	for i := 0; ctx.Err() == nil; i++ {
		word := fmt.Sprintf("fill-%d-%d", writer, i)
		code, body, err := tryCall("POST", url+"/banlist/admin/words", map[string]any{"word": word}, admin()...)
		got.mu.Lock()
		switch {
		case err == nil && code == 201:
			got.words = append(got.words, word)
		case got.restCode == 0:
			got.restCode, got.restBody = code, body
			if err != nil {
				got.restBody = map[string]any{"transport error": err.Error()}
			}
		}
		if err != nil || code != 201 {
			got.refused++
		}
		got.mu.Unlock()
		if code != 201 {
			pause(ctx)
		}
	}
}

// crashReport is the start of a Go crash in logs (the fault and the
// goroutine that took it), after what outpost logged about the disk, or
// the end of logs when there is none.
func crashReport(logs string) string {
	disk := strings.Join(linesWith(logs, "disk space", "disk reserve", "memtable log"), "\n")
	for _, head := range []string{"fatal error:", "unexpected fault address", "panic:"} {
		if i := strings.Index(logs, head); i >= 0 {
			return disk + "\n" + logs[i:min(len(logs), i+4000)]
		}
	}
	return disk + "\n" + tail(logs, 3000)
}

// crashed reports whether the child process has exited.
func crashed(c *child) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func eventIDs(evs []*nostr.Event) []string {
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	return ids
}

// without is want less what is in have.
func without(want, have []string) []string {
	seen := make(map[string]bool, len(have))
	for _, h := range have {
		seen[h] = true
	}
	var out []string
	for _, w := range want {
		if !seen[w] {
			out = append(out, w)
		}
	}
	return out
}

// containsAll reports whether list (a decoded JSON array of strings) holds every one of want.
func containsAll(list any, want []string) bool {
	items, _ := list.([]any)
	have := make([]string, 0, len(items))
	for _, it := range items {
		if s, ok := it.(string); ok {
			have = append(have, s)
		}
	}
	return len(without(want, have)) == 0
}
