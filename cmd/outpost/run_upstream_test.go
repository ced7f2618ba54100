package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// bareRelay is a khatru relay on 127.0.0.1 without NIP-77 holding evs.
func bareRelay(t *testing.T, evs ...nostr.Event) string {
	t.Helper()
	db := &slicestore.SliceStore{}
	db.Init()
	k := khatru.NewRelay()
	k.StoreEvent = append(k.StoreEvent, db.SaveEvent)
	k.QueryEvents = append(k.QueryEvents, db.QueryEvents)
	for _, ev := range evs {
		db.SaveEvent(context.Background(), &ev)
	}
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func mintPubkey(t *testing.T, mintURL string) string {
	t.Helper()
	resp, err := http.Get(mintURL + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct{ Pubkey string }
	json.NewDecoder(resp.Body).Decode(&info)
	return info.Pubkey
}

// TestUpstreamRelays runs outpost following two relays on 127.0.0.1: an
// upstream outpost (NIP-77) holding reviews, behind a proxy the test takes
// away and brings back, and a bare khatru relay (REQ only) holding the
// mint's announcement. The announcement adds the mint, the reviews count
// except the one by a key banned here, and a review published while the
// upstream was away is caught up when it is back.
func TestUpstreamRelays(t *testing.T) {
	t.Parallel()
	mint := startTestMint(t, t.TempDir(), "", "Upstream Mint")
	mintPub := mintPubkey(t, mint.URL)
	announcement := note(t, nostr.GeneratePrivateKey(), "", 38172, nostr.Tag{"d", mintPub}, nostr.Tag{"u", mint.URL})
	bare := bareRelay(t, announcement)

	up := start(t, t.TempDir(), nil)
	k := nostr.Tag{"k", "38172"}
	reviewer, banned := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	bannedPK, _ := nostr.GetPublicKey(banned)
	publishWS(t, up, note(t, reviewer, "[5/5] fast and honest", 38000, k, nostr.Tag{"d", mintPub}, nostr.Tag{"u", mint.URL}))
	publishWS(t, up, note(t, banned, "[1/5] scam!!", 38000, k, nostr.Tag{"d", mintPub}, nostr.Tag{"u", mint.URL}))
	proxy := testkit.NewProxy(t, strings.TrimPrefix(up.url, "http://"))

	dir := newDataDir(t) // the ban before the first sync
	var out bytes.Buffer
	if err := run(context.Background(), []string{"ban", "add", pubkey.NPub(bannedPK), "--reason", "review spam", "--data-dir", dir},
		testEnv(dir, nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	inst := start(t, dir, map[string]string{"OUTPOST_UPSTREAM_RELAYS": "ws://" + proxy.Addr() + "," + bare,
		"OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "500ms"})
	md := inst.url + "/mintdir"

	var id string
	testkit.WaitFor(t, 20*time.Second, "the announced mint in the directory", func() bool {
		code, m := call(t, "GET", md+"/mints/by-url?url="+url.QueryEscape(mint.URL), nil)
		if code == 200 {
			id = m["mint_id"].(string)
		}
		return code == 200
	})
	summary := func() map[string]any {
		_, rv := call(t, "GET", md+"/mints/"+id+"/reviews", nil)
		s, _ := rv["summary"].(map[string]any)
		return s
	}
	testkit.WaitFor(t, 20*time.Second, "the upstream review", func() bool { return summary()["count"] == 1.0 })
	if s := summary(); s["average_rating"] != 5.0 {
		t.Fatalf("summary = %v: the banned key's review counts", s)
	}

	relays := func() map[string]map[string]any {
		_, h := call(t, "GET", inst.url+"/health", nil)
		svc, _ := h["checks"].(map[string]any)["upstream"].(map[string]any)
		out := map[string]map[string]any{}
		if svc == nil {
			return out
		}
		for _, r := range svc["checks"].(map[string]any)["relays"].([]any) {
			r := r.(map[string]any)
			out[r["url"].(string)] = r
		}
		return out
	}
	testkit.WaitFor(t, 10*time.Second, "both relays caught up", func() bool {
		rs := relays()
		return len(rs) == 2 && rs["ws://"+proxy.Addr()]["last_sync_at"] != nil && rs[bare]["last_sync_at"] != nil
	})
	rs := relays()
	if m := rs["ws://"+proxy.Addr()]["method"]; m != "negentropy" {
		t.Errorf("the upstream outpost synced by %v", m)
	}
	if m := rs[bare]["method"]; m != "req" {
		t.Errorf("the bare relay synced by %v", m)
	}
	if ev := rs["ws://"+proxy.Addr()]["events"].(map[string]any); ev["skipped"] != 1.0 {
		t.Errorf("events from the upstream outpost: %v (the banned key's review is skipped)", ev)
	}

	proxy.Down()
	testkit.WaitFor(t, 10*time.Second, "the upstream seen gone", func() bool { return relays()["ws://"+proxy.Addr()]["connected"] == false })
	publishWS(t, up, note(t, nostr.GeneratePrivateKey(), "[3/5] slow today", 38000, k, nostr.Tag{"d", mintPub}, nostr.Tag{"u", mint.URL}))
	proxy.Up(t)
	testkit.WaitFor(t, 30*time.Second, "the review published while it was away", func() bool { return summary()["count"] == 2.0 })
	if r := relays()["ws://"+proxy.Addr()]; r["connected"] != true || r["reconnects"].(float64) < 1 || r["last_error"] == nil {
		t.Fatalf("upstream state = %v", r)
	}
}
