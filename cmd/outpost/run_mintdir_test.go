package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
)

func startTestMint(t *testing.T, dir, addr, name string) *devmint.Mint {
	t.Helper()
	return minttest.Start(t, devmint.Options{Dir: dir, Addr: addr, Name: name, Description: "whole-program test mint"})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestMintDirectory runs outpost with a one-second probe interval against
// real gonuts mints: submitted over REST, announced over Nostr (kind 38172),
// reviewed over Nostr (kind 38000), stopped and started again, and the
// whole program restarted on the same data dir.
func TestMintDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "500ms"}
	inst := start(t, dir, env)
	md := inst.url + "/mintdir"
	rl := connect(t, inst)

	mintDir, addr := t.TempDir(), freeAddr(t)
	mint := startTestMint(t, mintDir, addr, "Whole Program Mint")
	other := startTestMint(t, t.TempDir(), "", "Announced Mint")
	var id string

	get := func(path string) map[string]any {
		t.Helper()
		code, body := call(t, "GET", md+path, nil)
		if code != 200 {
			t.Fatalf("GET %s: %d %v", path, code, body)
		}
		return body
	}
	waitStatus := func(id, status string) map[string]any {
		t.Helper()
		var st map[string]any
		testkit.WaitFor(t, 15*time.Second, "status "+status, func() bool {
			st = get("/mints/" + id + "/status")
			return st["status"] == status
		})
		return st
	}

	t.Run("NIP-11 lists NIP-87", func(t *testing.T) {
		_, info := call(t, "GET", inst.url+"/", nil, "Accept", "application/nostr+json")
		nips, _ := info["supported_nips"].([]any)
		if !slices.Contains(nips, any(87.0)) {
			t.Fatalf("supported_nips = %v", info["supported_nips"])
		}
	})

	t.Run("submit and watch it come online", func(t *testing.T) {
		code, body := call(t, "POST", md+"/mints/submit", map[string]string{"mint_url": mint.URL})
		if code != 202 || body["status"] != "queued" {
			t.Fatalf("submit: %d %v", code, body)
		}
		id = body["mint_id"].(string)
		waitStatus(id, "online")
		core := get("/mints/" + id)
		if core["name"] != "Whole Program Mint" || core["canonical_url"] != mint.URL || core["uptime_24h"] != 100.0 {
			t.Fatalf("core = %v", core)
		}
		meta := get("/mints/" + id + "/metadata")
		if meta["name"] != "Whole Program Mint" || len(meta["pubkey"].(string)) != 66 || !strings.HasPrefix(meta["version"].(string), "gonuts/") || meta["nuts"] == nil {
			t.Fatalf("metadata = %v", meta)
		}
		if f := get("/mints/" + id + "/features"); f["supports_bolt11"] != true {
			t.Fatalf("features = %v", f)
		}
		if u := get("/mints/by-url/urls?url=" + url.QueryEscape(mint.URL+"/")); u["canonical_url"] != mint.URL {
			t.Fatalf("urls = %v", u)
		}
		// (That the prober keeps going on its own is checked once the mint
		// has gone offline and come back, by when it has without waiting.)
		if v1 := get("/v1/mints/" + id + "/features"); v1["supports_bolt11"] != true {
			t.Fatalf("/v1 features = %v", v1)
		}
	})

	t.Run("announcements and reviews over Nostr", func(t *testing.T) {
		sk := nostr.GeneratePrivateKey()
		mintPK := mintPubkey(t, other.URL)
		if err := publish(t, rl, note(t, sk, "", 38172, nostr.Tag{"d", mintPK}, nostr.Tag{"u", other.URL}, nostr.Tag{"n", "mainnet"})); err != nil {
			t.Fatal(err)
		}
		if err := publish(t, rl, note(t, sk, "", 38172, nostr.Tag{"d", mintPK})); err == nil || !strings.Contains(err.Error(), "invalid:") {
			t.Fatalf("an announcement without a URL: %v", err)
		}
		var announced string
		testkit.WaitFor(t, 15*time.Second, "the announced mint online", func() bool {
			code, m := call(t, "GET", md+"/mints/by-url?url="+url.QueryEscape(other.URL), nil)
			if code == 200 {
				announced = m["mint_id"].(string)
			}
			return code == 200 && m["status"] == "online"
		})
		if l := get("/mints?sort=name"); l["total"] != 3.0 || l["mints"].([]any)[0].(map[string]any)["name"] != "Announced Mint" {
			t.Fatalf("list = %v", l)
		}

		mintPub := get("/mints/" + id + "/metadata")["pubkey"].(string)
		k := nostr.Tag{"k", "38172"}
		a, b := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
		for _, ev := range []nostr.Event{
			note(t, a, "[5/5] flawless", 38000, k, nostr.Tag{"d", mintPub}, nostr.Tag{"u", mint.URL}),
			note(t, b, "fine", 38000, k, nostr.Tag{"d", mintPub}, nostr.Tag{"rating", "3"}),
			note(t, b, "another mint", 38000, k, nostr.Tag{"d", mintPK}, nostr.Tag{"u", other.URL}),
		} {
			if err := publish(t, rl, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := publish(t, rl, note(t, b, "x", 38000, k, nostr.Tag{"d", mintPub}, nostr.Tag{"rating", "five"})); err == nil || !strings.Contains(err.Error(), "rating") {
			t.Fatalf("a bad rating: %v", err)
		}
		rv := get("/mints/" + id + "/reviews")
		if s := rv["summary"].(map[string]any); s["count"] != 2.0 || s["average_rating"] != 4.0 {
			t.Fatalf("reviews = %v", rv)
		}
		if rv := get("/mints/" + announced + "/reviews"); len(rv["reviews"].([]any)) != 1 {
			t.Fatalf("the announced mint's reviews = %v", rv)
		}
	})

	t.Run("stopped: offline with an open incident; started: closed with a severity", func(t *testing.T) {
		mint.Close()
		st := waitStatus(id, "offline")
		if st["offline_since"] == nil || st["last_error"] != "connection_refused" {
			t.Fatalf("status = %v", st)
		}
		incs := get("/mints/" + id + "/incidents")["incidents"].([]any)
		if len(incs) != 1 || incs[0].(map[string]any)["resolved_at"] != nil {
			t.Fatalf("incidents = %v", incs)
		}
		mint = startTestMint(t, mintDir, addr, "Whole Program Mint")
		waitStatus(id, "online")
		// The prober keeps going on its own: no request asked for these.
		testkit.WaitFor(t, 10*time.Second, "more checks", func() bool {
			return get("/mints/" + id + "/uptime")["total_checks"].(float64) >= 3
		})
		inc := get("/mints/" + id + "/incidents")["incidents"].([]any)[0].(map[string]any)
		if inc["resolved_at"] == nil || inc["severity"] != "minor" || inc["duration_seconds"].(float64) < 2 {
			t.Fatalf("incident = %v", inc)
		}
	})

	t.Run("health and stats", func(t *testing.T) {
		h := get("/health")
		if c, _ := h["checks"].(map[string]any); h["status"] != "ok" || c["mints_total"] != 3.0 || c["last_probe_cycle_at"] == nil {
			t.Fatalf("health = %v", h)
		}
		_, root := call(t, "GET", inst.url+"/health", nil)
		if svc := root["checks"].(map[string]any)["mintdir"].(map[string]any); svc["status"] != "ok" {
			t.Fatalf("root health = %v", root)
		}
		s := get("/stats")
		if s["mints_total"] != 3.0 || s["reviews_total"] != 3.0 || s["incidents_open"] != 0.0 {
			t.Fatalf("stats = %v", s)
		}
	})

	t.Run("a restart keeps the history and carries on", func(t *testing.T) {
		before := get("/mints/" + id + "/uptime")["total_checks"].(float64)
		inst.shutdown(t)
		inst.done = make(chan error, 1)
		inst.done <- nil
		inst2 := start(t, dir, env)
		md = inst2.url + "/mintdir"
		if incs := get("/mints/" + id + "/incidents")["incidents"].([]any); len(incs) != 1 {
			t.Fatalf("incidents after restart: %v", incs)
		}
		if rv := get("/mints/" + id + "/reviews"); len(rv["reviews"].([]any)) != 2 {
			t.Fatalf("reviews after restart: %v", rv)
		}
		testkit.WaitFor(t, 10*time.Second, "checks after the restart", func() bool {
			return get("/mints/" + id + "/uptime")["total_checks"].(float64) >= before+2
		})
	})
}

// A fresh outpost's directory lists the faucet's embedded test mint and
// checks it, though it is on loopback; every other loopback mint, even on
// another port of the same address, is refused as before.
func TestMintDirectoryRefusesPrivateMintsByDefault(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_PROBE_INTERVAL": "1s"})
	_, cfg := call(t, "GET", inst.url+"/faucet/config", nil)
	own, _ := cfg["mint_url"].(string)
	testkit.WaitFor(t, 15*time.Second, "the embedded mint listed and online", func() bool {
		code, body := call(t, "GET", inst.url+"/mintdir/mints/by-url?url="+url.QueryEscape(own), nil)
		return code == 200 && body["status"] == "online" && body["name"] == "outpost test mint"
	})
	if code, body := call(t, "POST", inst.url+"/mintdir/mints/submit", map[string]string{"mint_url": own}); code != 200 || body["status"] != "exists" {
		t.Fatalf("submit of the embedded mint: %d %v", code, body)
	}
	u, _ := url.Parse(own)
	port, _ := strconv.Atoi(u.Port())
	other := fmt.Sprintf("http://%s:%d", u.Hostname(), port^1) // the same address, another port
	for _, u := range []string{"http://127.0.0.1:3338", other} {
		if code, body := call(t, "POST", inst.url+"/mintdir/mints/submit", map[string]string{"mint_url": u}); code != 400 || body["error"] != "invalid_mint_url" {
			t.Fatalf("submit of the loopback mint %s: %d %v", u, code, body)
		}
	}
	code, body := 0, map[string]any(nil)
	code, body = call(t, "GET", inst.url+"/mintdir/mints/by-url", nil)
	if code != 400 || body["error"] != "missing_url" {
		t.Fatalf("by-url without url: %d %v", code, body)
	}
	resp, err := http.Get(inst.url + "/mintdir/openapi.json")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("openapi: %v %v", resp, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"/mints/by-url/uptime/timeseries"`) {
		t.Fatal("openapi.json lacks the seed's paths")
	}
}

func TestMintdirBadConfigNamesTheSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for env, want := range map[string]map[string]string{
		"OUTPOST_PROBE_INTERVAL":            {"OUTPOST_PROBE_INTERVAL": "soon"},
		"OUTPOST_PROBE_TIMEOUT":             {"OUTPOST_PROBE_INTERVAL": "2s", "OUTPOST_PROBE_TIMEOUT": "2s"},
		"OUTPOST_PROBE_CONCURRENCY":         {"OUTPOST_PROBE_CONCURRENCY": "0"},
		"OUTPOST_PROBE_SLOW_MS":             {"OUTPOST_PROBE_SLOW_MS": "-5"},
		"OUTPOST_MINTDIR_MOUNT":             {"OUTPOST_MINTDIR_MOUNT": "/banlist"},
		"OUTPOST_MINTDIR_SUBMIT_RATE_LIMIT": {"OUTPOST_MINTDIR_SUBMIT_RATE_LIMIT": "-1"},
		"OUTPOST_PROBE_ALLOW_PRIVATE":       {"OUTPOST_PROBE_ALLOW_PRIVATE": "maybe"},
		"OUTPOST_MONITORS":                  {"OUTPOST_MONITORS": "npub1notakey"},
	} {
		err := run(context.Background(), nil, testEnv(dir, want), nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%v: %v, want an error naming %s", want, err, env)
		}
	}
}
