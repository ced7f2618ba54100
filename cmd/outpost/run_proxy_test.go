package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/probetest"
)

// TestProbeProxy runs outpost with OUTPOST_PROBE_PROXY at a SOCKS5 proxy on
// 127.0.0.1 that maps an onion service name to a test mint: the .onion mint
// is listed and checked through it, with the SSRF guard on.
func TestProbeProxy(t *testing.T) {
	t.Parallel()
	const onion = "http://mintmintmintmintmintmintmintmintmintmintmintmintmint2345.onion"
	mint := startTestMint(t, t.TempDir(), "", "Hidden Mint")
	px := probetest.SOCKS5(t, map[string]string{strings.TrimPrefix(onion, "http://") + ":80": strings.TrimPrefix(mint.URL, "http://")})
	inst := start(t, newDataDir(t), map[string]string{"OUTPOST_PROBE_PROXY": px.URL, "OUTPOST_FAUCET_PRIMARY": "https://elsewhere.example/faucet",
		"OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "500ms"})
	if code, body := call(t, "POST", inst.url+"/mintdir/mints/submit", map[string]string{"mint_url": onion}); code != 201 && code != 202 {
		t.Fatalf("submit: %d %v", code, body)
	}
	testkit.WaitFor(t, 20*time.Second, "the onion mint online", func() bool {
		_, m := call(t, "GET", inst.url+"/mintdir/mints/by-url?url="+url.QueryEscape(onion), nil)
		return m["status"] == "online" && m["name"] == "Hidden Mint"
	})
	if len(px.Asked()) == 0 {
		t.Fatal("the proxy was never asked")
	}
}
