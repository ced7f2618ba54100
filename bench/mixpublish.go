package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// mixPublishMain publishes lines [from, to) of a JSONL file of signed
// events over several connections and reports the rate (the mix's ingest).
// Each connection keeps up to window EVENTs in flight, as real clients do
// (NIP-01 lets them send the next before the OK of the last): with one in
// flight a relay that groups its commits never sees more waiting than there
// are connections, and the rate measures round trips more than the store.
func mixPublishMain(args []string) error {
	fs := flag.NewFlagSet("mixpublish", flag.ExitOnError)
	url := fs.String("url", "", "relay ws:// URL")
	file := fs.String("file", "", "JSONL of signed events")
	from := fs.Int("from", 0, "first line to publish")
	to := fs.Int("to", -1, "line to stop before (-1: the end)")
	conns := fs.Int("conns", 16, "connections")
	window := fs.Int("window", 1, "EVENTs each connection keeps in flight (sent before their OKs came)")
	fs.Parse(args)
	f, err := os.Open(*file)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	relays := make([]*nostr.Relay, *conns)
	for i := range relays {
		if relays[i], err = nostr.RelayConnect(ctx, *url); err != nil {
			return err
		}
		defer relays[i].Close()
	}
	lines := make(chan []byte, 4**conns**window)
	var rejected, sent atomic.Int64
	var firstRefusal atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := range *conns * max(*window, 1) {
		r := relays[i%*conns] // go-nostr's Publish may be called concurrently on one connection
		wg.Go(func() {
			for line := range lines {
				var ev nostr.Event
				err := json.Unmarshal(line, &ev)
				if err == nil {
					err = r.Publish(ctx, ev)
				}
				sent.Add(1)
				if err != nil {
					rejected.Add(1)
					firstRefusal.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for i := 0; (*to < 0 || i < *to) && sc.Scan(); i++ {
		if i >= *from {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}
	close(lines)
	wg.Wait()
	if err := sc.Err(); err != nil {
		return err
	}
	took := time.Since(start).Seconds()
	n := int(sent.Load())
	if why := firstRefusal.Load(); why != nil {
		fmt.Fprintln(os.Stderr, "mixpublish: first refusal:", why)
	}
	return json.NewEncoder(os.Stdout).Encode(ingestResult{Events: n, Rejected: rejected.Load(), Seconds: took, PerSec: float64(n) / took})
}
