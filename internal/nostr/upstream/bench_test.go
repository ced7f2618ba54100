package upstream_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// countingProxy forwards to target and counts the bytes both ways.
type countingProxy struct {
	ln    net.Listener
	bytes atomic.Int64
}

func newCountingProxy(b *testing.B, target string) *countingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			copyCount := func(dst, src net.Conn) {
				io.Copy(counter{dst, &p.bytes}, src)
				dst.Close()
				src.Close()
			}
			go copyCount(s, c)
			go copyCount(c, s)
		}
	}()
	return p
}

// BenchmarkSync catches an empty outpost up with an upstream outpost relay
// holding 50,000 reviews (2,000 with -short), by NIP-77 negentropy and by
// REQ pages: time and bytes on the wire.
// Run with -benchtime=1x: one iteration is one whole sync.
func BenchmarkSync(b *testing.B) {
	n := 50_000
	if testing.Short() {
		n = 2_000
	}
	up := newNode(b)
	evs := make([]nostr.Event, n)
	for i := range evs {
		evs[i] = review(b, nostr.GeneratePrivateKey(), 1+i%5)
	}
	for i := range evs {
		up.rl.Publish(context.Background(), &evs[i])
	}
	for _, mode := range []struct {
		name    string
		reqOnly bool
	}{{"negentropy", false}, {"req", true}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				local := newNode(b)
				proxy := newCountingProxy(b, up.addr)
				s := upstream.New(upstream.Config{Settings: upstream.Settings{Relays: []string{"ws://" + proxy.ln.Addr().String()}},
					Events: local.st.Events, Ingest: local.rl.Ingest, Log: quiet, REQOnly: mode.reqOnly})
				ctx, cancel := context.WithCancel(context.Background())
				start := time.Now()
				done := make(chan struct{})
				go func() { s.Run(ctx); close(done) }()
				testkit.WaitFor(b, time.Minute, "the catch-up", func() bool { return s.Health(ctx).Checks.Relays[0].LastSyncAt != nil })
				elapsed := time.Since(start)
				cancel()
				<-done
				if got := s.Health(ctx).Checks.Relays[0].Events.Stored; got != int64(n) {
					b.Fatalf("stored %d of %d", got, n)
				}
				b.ReportMetric(elapsed.Seconds(), "s/sync")
				b.ReportMetric(float64(proxy.bytes.Load())/1e6, "MB/sync")
			}
		})
	}
}

type counter struct {
	w io.Writer
	n *atomic.Int64
}

func (c counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
