package outbound_test

import (
	"context"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/guard/outbound"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/probetest"
)

// Requests through an environment-style proxy (the transport's Proxy, as
// HTTPS_PROXY sets it) that hangs, trickles or floods all fail, and leave
// no descriptor or goroutine behind: net/http runs a SOCKS5 proxy's
// handshake on a dial detached from the request, with no deadline but the
// connection's own.
func TestHostileProxyLeavesNothing(t *testing.T) {
	var clients []*http.Client
	for _, scheme := range []string{"socks5", "http"} {
		for _, b := range []probetest.Behaviour{probetest.Hang, probetest.Trickle, probetest.Flood} {
			px, err := url.Parse(probetest.Hostile(t, scheme, b).URL)
			if err != nil {
				t.Fatal(err)
			}
			c := outbound.Client(300 * time.Millisecond)
			c.Transport.(*http.Transport).Proxy = http.ProxyURL(px)
			clients = append(clients, c)
		}
	}
	get := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://192.0.2.1/", nil)
				if resp, err := c.Do(req); err == nil {
					resp.Body.Close()
					t.Error("a hostile proxy answered")
				}
			})
		}
		wg.Wait()
	}
	get()
	fds0, g0 := testkit.OpenFDs(t), runtime.NumGoroutine()
	// A round is 300 ms (the clients' timeout). Three rounds of six
	// requests leave 18 of whatever one request leaks, past Flat's slack
	// of 12, as ten rounds do; the full run makes ten.
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	for range rounds {
		get()
	}
	testkit.Flat(t, 30*time.Second, fds0, g0, 12)
}
