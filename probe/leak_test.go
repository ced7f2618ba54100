package probe_test

import (
	"context"
	"flag"
	"io"
	"log"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/probetest"
	"github.com/outpost-relay/outpost/probe"
)

var leakFor = flag.Duration("leakfor", 5*time.Minute, "how long TestHostileProxiesLeakNothing checks through its proxies")

// slack over the first round's counts is what one round's checks may
// still be letting go of when the next sample is taken (both ends of six
// connections, the proxies' goroutines between their writes).
const slack = 40

// A proxy that hangs, one that trickles a byte a second and one that floods,
// each as a SOCKS5 and as an HTTP CONNECT proxy, all checked through at once,
// round after round: every check fails, and descriptors and goroutines stay
// flat, because each dial ends with its check, not when the proxy lets go.
func TestHostileProxiesLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for -leakfor (5 minutes) to show descriptors and goroutines stay flat; CI runs it without -short")
	}
	log.SetOutput(io.Discard) // net/http logs the flood that follows a SOCKS5 handshake, each round
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	var clients []*probe.Client
	for _, scheme := range []string{"socks5", "http"} {
		for _, b := range []probetest.Behaviour{probetest.Hang, probetest.Trickle, probetest.Flood} {
			px := probetest.Hostile(t, scheme, b)
			clients = append(clients, probe.NewClient(probe.ClientOptions{Timeout: 300 * time.Millisecond, Proxy: proxyURL(t, px.URL)}))
		}
	}
	checkAll(t, clients) // the first round allocates what the runtime keeps
	fds0, g0 := testkit.OpenFDs(t), runtime.NumGoroutine()
	rounds := 0
	for end := time.Now().Add(*leakFor); time.Now().Before(end); rounds++ {
		checkAll(t, clients)
		testkit.Flat(t, 30*time.Second, fds0, g0, slack)
	}
	t.Logf("%d rounds: %d descriptors and %d goroutines after the first, %d and %d now",
		rounds, fds0, g0, testkit.OpenFDs(t), runtime.NumGoroutine())
}

// checkAll checks a mint through every client at once; none may get through.
func checkAll(t *testing.T, clients []*probe.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			if res := c.Info(ctx, "http://"+onion, time.Now); res.OK {
				t.Errorf("a hostile proxy got a check through")
			}
		})
	}
	wg.Wait()
}
