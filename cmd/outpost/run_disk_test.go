package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestFullDisk runs outpost with its data dir on a 64 MiB filesystem and
// fills it through the relay and the REST API. Before the free-space gate
// it died of SIGBUS inside badger, and could not start again. Now: writes
// are refused with an "error:" OK message and a JSON 507, reads are served,
// /health says why, the low space is logged once, writes resume when space
// is freed, and a start on a full disk is refused in words.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a whole program on a full tmpfs; store's TestFullDisk, faucet's and mintdir's full-disk tests cover the refusals in-process")
	}
	disk := testkit.NewFullDisk(t)
	dir, min := disk.Dir, disk.Min
	env := map[string]string{"OUTPOST_MIN_FREE_SPACE": fmt.Sprint(min),
		// Background work that writes goes on all the time: a mint probed
		// every second, the faucet's job every 100 ms.
		"OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_FAUCET_POLL_INTERVAL": "100ms",
		// These tests write as fast as they can, from one key and address.
		"OUTPOST_RELAY_EVENTS_PER_MINUTE": "0", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE": "0"}
	inst := start(t, dir, env)
	mint := startTestMint(t, t.TempDir(), "", "Full Disk Mint")
	if code, body := call(t, "POST", inst.url+"/mintdir/mints/submit", map[string]string{"mint_url": mint.URL}); code != 201 && code != 202 {
		t.Fatalf("submitting a mint: %d %v", code, body)
	}
	filler := testkit.Fill(t, dir, int64(min)+12<<20) // after outpost's own start-up writes: 12 MiB to fill
	rl := connect(t, inst)
	sk := nostr.GeneratePrivateKey()
	// Random, so that badger's compression of its tables cannot make room.
	noise := make([]byte, 45_000)
	rand.Read(noise)
	big := base64.StdEncoding.EncodeToString(noise) // 60 KB
	first := note(t, sk, "the first note", 1)
	if err := publish(t, rl, first); err != nil {
		t.Fatal(err)
	}

	var evErr error
	var code int
	var body map[string]any
	for i := 0; evErr == nil || code != http.StatusInsufficientStorage; i++ {
		if i > 1000 { // 60 MB
			t.Fatalf("writes were never refused: %v, %d %v", evErr, code, body)
		}
		if evErr == nil {
			evErr = publish(t, rl, note(t, sk, fmt.Sprint(i, big), 1))
		}
		if code != http.StatusInsufficientStorage {
			code, body = call(t, "POST", inst.url+"/banlist/admin/words", map[string]any{"word": fmt.Sprint("filler", i)}, admin()...)
			if code != 201 && code != http.StatusInsufficientStorage {
				t.Fatalf("adding a word: %d %v", code, body)
			}
		}
	}
	if !strings.Contains(evErr.Error(), "error: ") || !strings.Contains(evErr.Error(), "disk space") {
		t.Errorf("event refused with %v, want an error: reason about disk space", evErr)
	}
	if body["error"] != "insufficient_storage" || body["message"] == nil {
		t.Errorf("REST write refused with %v, want a JSON insufficient_storage error", body)
	}
	pk, _ := nostr.GetPublicKey(sk)
	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/banlist/admin/ban", map[string]any{"pubkey": strings.Repeat("ab", 32), "reason": "spam"}},
		{"POST", "/banlist/reports", map[string]any{"reported_pubkey": strings.Repeat("ab", 32), "reason": "spam"}},
		{"POST", "/mintdir/mints/submit", map[string]any{"mint_url": "http://127.0.0.1:9/"}},
		{"POST", "/faucet/auth/login-npub", map[string]any{"npub": pubkey.NPub(pk)}},
	} {
		if code, body := call(t, w.method, inst.url+w.path, w.body, admin()...); code != http.StatusInsufficientStorage || body["error"] != "insufficient_storage" {
			t.Errorf("%s %s on a full disk: %d %v, want 507 insufficient_storage", w.method, w.path, code, body)
		}
	}

	// Reads go on.
	if got := query(t, rl, nostr.Filter{IDs: []string{first.ID}}); len(got) != 1 {
		t.Errorf("the first note cannot be read: %v", got)
	}
	if code, body := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code != 200 || !strings.Contains(fmt.Sprint(body["words"]), "filler0") {
		t.Errorf("GET /banlist/blocked/words: %d %v", code, body)
	}
	if code, _ := call(t, "GET", inst.url+"/mintdir/mints", nil); code != 200 {
		t.Errorf("GET /mintdir/mints: %d", code)
	}
	code, health := call(t, "GET", inst.url+"/health", nil)
	storage, _ := health["checks"].(map[string]any)["storage"].(map[string]any)
	checks, _ := storage["checks"].(map[string]any)
	if code != 200 || health["status"] != "degraded" || storage["status"] != "degraded" || checks["writable"] != false ||
		!strings.Contains(fmt.Sprint(storage["reason"]), "OUTPOST_MIN_FREE_SPACE") || !strings.Contains(fmt.Sprint(health["reason"]), "storage is degraded") {
		t.Errorf("/health on a full disk: %d %v", code, health)
	}
	// Background work (three rounds of mint checks, thirty of the faucet's
	// job) waits quietly: before it did, each failed check logged an error.
	time.Sleep(3 * time.Second) // what must not happen (logging) can only be seen not to, over rounds of the real loops
	logs := inst.logs.String()
	if n := strings.Count(logs, "disk space low"); n != 1 {
		t.Errorf("low disk space logged %d times, want once", n)
	}
	if bad := linesWith(logs, "level=ERROR", "insufficient_storage"); len(bad) > 0 {
		t.Errorf("errors logged while the disk was full; the warning once is enough:\n%s", strings.Join(bad, "\n"))
	}

	// Writes resume by themselves once there is room.
	os.Remove(filler)
	testkit.WaitFor(t, 10*time.Second, "writes to resume", func() bool {
		code, _ := call(t, "POST", inst.url+"/banlist/admin/words", map[string]any{"word": "after"}, admin()...)
		return code == 201
	})
	if err := publish(t, rl, note(t, sk, "room again", 1)); err != nil {
		t.Errorf("publishing after space was freed: %v", err)
	}
	if _, h := call(t, "GET", inst.url+"/health", nil); h["status"] != "ok" {
		t.Errorf("/health after space was freed: %v", h)
	}
	inst.shutdown(t)
	inst.done = make(chan error, 1)
	inst.done <- nil

	// A start with too little space says so and exits.
	testkit.Fill(t, dir, int64(min)-4<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, nil, testEnv(dir, env), strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "OUTPOST_MIN_FREE_SPACE") || !strings.Contains(err.Error(), "free some space") {
		t.Errorf("start on a full disk: %v", err)
	}
	os.Remove(filler)
	inst = start(t, dir, env)
	if code, body := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code != 200 || !strings.Contains(fmt.Sprint(body["words"]), "after") {
		t.Errorf("after a restart: %d %v", code, body)
	}
}

// linesWith is the lines of logs that contain any of subs.
func linesWith(logs string, subs ...string) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}
