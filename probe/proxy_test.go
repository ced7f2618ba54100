package probe_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
	"github.com/outpost-relay/outpost/internal/testkit/netguardtest"
	"github.com/outpost-relay/outpost/internal/testkit/probetest"
	"github.com/outpost-relay/outpost/probe"
)

// onion is a well-formed v3 onion service name, which the test proxies map
// to the test mint.
const onion = "mintmintmintmintmintmintmintmintmintmintmintmintmint2345.onion"

func proxyURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := probe.ParseProxy(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A real mint behind an onion service name is probed through a SOCKS5
// proxy (as Tor's) and through an HTTP proxy that CONNECTs; the name goes
// to the proxy unresolved, and the guard, which stays on, lets it through.
func TestProbeThroughProxy(t *testing.T) {
	t.Parallel()
	mint := minttest.Start(t, devmint.Options{})
	hostport := strings.TrimPrefix(mint.URL, "http://")
	for _, start := range []func(testing.TB, map[string]string) *probetest.Proxy{probetest.SOCKS5, probetest.Connect} {
		px := start(t, map[string]string{onion + ":80": hostport})
		t.Run(px.URL[:strings.Index(px.URL, ":")], func(t *testing.T) {
			c := probe.NewClient(probe.ClientOptions{Timeout: 5 * time.Second, Proxy: proxyURL(t, px.URL)})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res := c.Info(ctx, "http://"+onion, time.Now)
			if !res.OK || !strings.Contains(string(res.Body), `"nuts"`) {
				t.Fatalf("through %s: ok=%v kind=%q (%s)", px.URL, res.OK, res.ErrKind, res.Err)
			}
			if _, err := c.Keysets(ctx, "http://"+onion); err != nil {
				t.Fatalf("keysets: %v", err)
			}
			if asked := px.Asked(); len(asked) != 2 || asked[0] != onion+":80" {
				t.Fatalf("the proxy was asked for %q", asked)
			}
		})
	}
}

// What the proxy is asked for stays guarded: private addresses, names that
// resolve to them and names that are not onion services are refused before
// the proxy hears of them. The proxy's own address, on loopback, is fine.
func TestProxyKeepsTheGuard(t *testing.T) {
	t.Parallel()
	mint := minttest.Start(t, devmint.Options{})
	for _, start := range []func(testing.TB, map[string]string) *probetest.Proxy{probetest.SOCKS5, probetest.Connect} {
		px := start(t, nil)
		c := probe.NewClient(probe.ClientOptions{Timeout: 2 * time.Second, Proxy: proxyURL(t, px.URL)})
		bad := []string{mint.URL, strings.Replace(mint.URL, "127.0.0.1", "localhost", 1), "http://short.onion", "http://a.b.onion", "http://" + onion[:55] + "1.onion"}
		for _, ip := range netguardtest.Blocked {
			bad = append(bad, "https://"+netguardtest.URLHost(ip))
		}
		for _, u := range bad {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			res := c.Info(ctx, u, time.Now)
			cancel()
			if res.OK || res.ErrKind != probe.KindBlocked {
				t.Errorf("%s via %s: ok=%v kind=%q (%s), want blocked_address", u, px.URL, res.OK, res.ErrKind, res.Err)
			}
		}
		if asked := px.Asked(); len(asked) != 0 {
			t.Fatalf("%s was asked for %q", px.URL, asked)
		}
		// Allowed exactly: the proxy hears of it, so it is the proxy's to reach.
		open := probe.NewClient(probe.ClientOptions{Timeout: 5 * time.Second, AllowPrivate: true, Proxy: proxyURL(t, px.URL)})
		if res := open.Info(context.Background(), mint.URL, time.Now); !res.OK {
			t.Fatalf("private allowed, via %s: %q (%s)", px.URL, res.ErrKind, res.Err)
		}
		if asked := px.Asked(); !slices.Equal(asked, []string{strings.TrimPrefix(mint.URL, "http://")}) {
			t.Fatalf("%s was asked for %q", px.URL, asked)
		}
	}
}

// The mints outpost runs itself (Allow) are on this host: dialled directly,
// not through a proxy that is elsewhere.
func TestOwnMintSkipsTheProxy(t *testing.T) {
	t.Parallel()
	mint := minttest.Start(t, devmint.Options{})
	px := probetest.SOCKS5(t, nil)
	c := probe.NewClient(probe.ClientOptions{Timeout: 5 * time.Second, Proxy: proxyURL(t, px.URL), Allow: []string{strings.TrimPrefix(mint.URL, "http://")}})
	if res := c.Info(context.Background(), mint.URL, time.Now); !res.OK {
		t.Fatalf("own mint: %q (%s)", res.ErrKind, res.Err)
	}
	if len(px.Asked()) != 0 {
		t.Fatalf("the proxy was asked for %q", px.Asked())
	}
}

// Without a proxy an onion service is never looked up: a clear kind at
// once, not a DNS query for a name no resolver may answer.
func TestOnionWithoutProxy(t *testing.T) {
	t.Parallel()
	c := probe.NewClient(probe.ClientOptions{Timeout: 2 * time.Second})
	if res := c.Info(context.Background(), "http://"+onion, time.Now); res.OK || res.ErrKind != probe.KindNeedsProxy {
		t.Fatalf("ok=%v kind=%q (%s), want %s", res.OK, res.ErrKind, res.Err, probe.KindNeedsProxy)
	}
}

// A proxy that is down fails the check, as the mint's network would.
func TestProxyDown(t *testing.T) {
	t.Parallel()
	c := probe.NewClient(probe.ClientOptions{Timeout: 2 * time.Second, Proxy: proxyURL(t, "socks5://127.0.0.1:1")})
	if res := c.Info(context.Background(), "http://"+onion, time.Now); res.OK || res.ErrKind != probe.KindRefused {
		t.Fatalf("ok=%v kind=%q (%s)", res.OK, res.ErrKind, res.Err)
	}
}

func TestParseProxy(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"socks5://127.0.0.1:9050", "http://proxy.example:3128", "socks5://u:p@[::1]:1080"} {
		if u, err := probe.ParseProxy(s); err != nil || u == nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"https://p:1", "socks4://p:1", "socks5://p", "http://:80", "http://p:1/x", "http://p:1?q", "::"} {
		if _, err := probe.ParseProxy(s); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
	if u, err := probe.ParseProxy(""); u != nil || err != nil {
		t.Errorf("empty: %v %v", u, err)
	}
}
