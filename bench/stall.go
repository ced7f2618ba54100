package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// stallResult is what publishers saw while (or without) slow subscribers.
type stallResult struct {
	Events  int     `json:"events"`
	OKs     int     `json:"oks"`    // OKs received in time
	P50ms   float64 `json:"p50_ms"` // of the OKs received
	P99ms   float64 `json:"p99_ms"` // of every event; one never answered counts as the deadline
	MaxMs   float64 `json:"max_ms"`
	Over1s  int     `json:"over_1s"` // OKs slower than a second, or never
	Seconds float64 `json:"seconds"` // the whole publishing run
	Dropped bool    `json:"dropped"` // the relay hung up on the stalled subscriber
}

// stallMain publishes events from 4 connections, one at a time each, and
// times every OK, while (with -slow) one subscriber to everything reads
// nothing and another reads 2 KB/s and answers pings.
func stallMain(args []string) error {
	fs := flag.NewFlagSet("stall", flag.ExitOnError)
	url := fs.String("url", "", "relay ws:// URL")
	n := fs.Int("events", 10000, "events to publish")
	slow := fs.Bool("slow", true, "with the stalled and the 2 KB/s subscribers")
	deadline := fs.Duration("deadline", 2*time.Minute, "give up on OKs after this")
	silence := fs.Duration("silence", 5*time.Second, "the relay has not hung up on the stalled subscriber if it sends nothing for this long")
	fs.Parse(args)

	const publishers = 4
	events := make([]nostr.Event, *n)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	base := time.Now().Unix()
	for i := range events {
		events[i] = nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(base), Content: note300(1_000_000 + i)}
		events[i].Sign(keys[i%len(keys)])
	}
	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()

	var stalled *websocket.Conn
	if *slow {
		var err error
		if stalled, err = dialSmall(ctx, *url); err != nil {
			return err
		}
		defer stalled.Close()
		slowly, err := dialSmall(ctx, *url)
		if err != nil {
			return err
		}
		defer slowly.Close()
		for _, c := range []*websocket.Conn{stalled, slowly} {
			if err := c.WriteMessage(websocket.TextMessage, []byte(`["REQ","all",{"limit":0}]`)); err != nil {
				return err
			}
		}
		go relaytest.ReadSlowly(slowly, 2048)
	}

	res, err := timePublishing(ctx, *url, events, publishers, *deadline)
	if err != nil {
		return err
	}
	if stalled != nil {
		res.Dropped = hungUp(stalled, *silence)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// timePublishing publishes events from publishers connections, one at a
// time each, and times every OK.
func timePublishing(ctx context.Context, url string, events []nostr.Event, publishers int, deadline time.Duration) (stallResult, error) {
	relays := make([]*nostr.Relay, publishers)
	for i := range relays {
		r, err := nostr.RelayConnect(ctx, url)
		if err != nil {
			return stallResult{}, err
		}
		relays[i] = r
	}
	latencies := make([][]time.Duration, publishers)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for p, r := range relays {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(events)) || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := r.Publish(ctx, events[i]); err == nil {
					latencies[p] = append(latencies[p], time.Since(t0))
				}
			}
		})
	}
	wg.Wait()
	res := summarize(slices.Concat(latencies...), len(events), deadline)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// summarize turns the OK latencies of n events into figures; an event never
// answered counts as slow as the deadline.
func summarize(all []time.Duration, n int, deadline time.Duration) stallResult {
	slices.Sort(all)
	res := stallResult{Events: n, OKs: len(all)}
	for len(all) < n {
		all = append(all, deadline)
	}
	if res.OKs > 0 {
		res.P50ms = millis(all[len(all)/2])
	}
	res.P99ms, res.MaxMs = millis(all[len(all)*99/100]), millis(all[len(all)-1])
	for _, d := range all {
		if d > time.Second {
			res.Over1s++
		}
	}
	return res
}

// hungUp reads what the stalled subscriber was sent, until the relay's
// hang-up (true) or silence for that long (false).
func hungUp(c *websocket.Conn, silence time.Duration) bool {
	for {
		c.SetReadDeadline(time.Now().Add(silence))
		if _, _, err := c.ReadMessage(); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// dialSmall connects with a 4 KiB receive buffer, so that not reading
// stalls the relay's writes soon.
func dialSmall(ctx context.Context, url string) (*websocket.Conn, error) {
	d := websocket.Dialer{NetDialContext: relaytest.SmallReceiveBuffer(4096)}
	c, _, err := d.DialContext(ctx, url, nil)
	return c, err
}
