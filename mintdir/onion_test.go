package mintdir

import (
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/testkit/probetest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
)

const onionName = "mintmintmintmintmintmintmintmintmintmintmintmintmint2345.onion"

// An onion mint is listed and checked through the proxy (here a SOCKS5
// server that maps its name to a fake mint); a directory without a proxy
// refuses to list one, and leaves one already listed unchecked rather than
// calling it down.
func TestOnionMintThroughProxy(t *testing.T) {
	t.Parallel()
	f := newFakeMint(t, "Hidden", pk1)
	px := probetest.SOCKS5(t, map[string]string{onionName + ":80": strings.TrimPrefix(f.URL, "http://")})
	st := storetest.Open(t, storetest.Options{})
	e := newEnvOn(t, st, Config{Settings: Settings{ProbeProxy: px.URL}})
	if _, err := e.dir.Submit(e.ctx, "http://abc.onion"); outpost.AsError(err) == nil {
		t.Fatalf("a malformed onion name was listed: %v", err)
	}
	id := e.submit("http://" + onionName)
	if m := e.probe(id); m.Status != StatusOnline || m.ChecksTotal != 1 || m.URLType("http://"+onionName) != URLTor {
		t.Fatalf("through the proxy: status %q, %d checks", m.Status, m.ChecksTotal)
	}
	if len(px.Asked()) == 0 {
		t.Fatal("the proxy was not asked")
	}

	bare := newEnvOn(t, st, Config{})
	if _, err := bare.dir.Submit(bare.ctx, "http://"+onionName+"/x"); outpost.AsError(err) == nil || !strings.Contains(err.Error(), "proxy") {
		t.Fatalf("listed without a proxy: %v", err)
	}
	for range 3 {
		bare.clock.Add(10 * time.Minute)
		if m := bare.probe(id); m.Status != StatusOnline || m.ChecksTotal != 1 {
			t.Fatalf("without a proxy: status %q, %d checks", m.Status, m.ChecksTotal)
		}
	}
}
