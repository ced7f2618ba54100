package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// ingestResult is what one ingest run measured.
type ingestResult struct {
	Events   int     `json:"events"`
	Rejected int64   `json:"rejected"`
	Seconds  float64 `json:"seconds"`
	PerSec   float64 `json:"per_sec"`
	Author   string  `json:"author"` // the first author's key: it wrote events/authors of them
}

// ingestMain publishes pre-signed 300-character notes over several
// connections as fast as the relay acknowledges them.
func ingestMain(args []string) error {
	fs := flag.NewFlagSet("ingest", flag.ExitOnError)
	url := fs.String("url", "", "relay ws:// URL")
	n := fs.Int("events", 5000, "events to publish")
	conns := fs.Int("conns", 16, "connections")
	seed := fs.Int("seed", 1, "varies the events between runs")
	authors := fs.Int("authors", 256, "distinct authors, taking turns")
	spread := fs.Bool("spread", false, "created_at one second apart up to now (default: all now)")
	fs.Parse(args)

	keys := make([]string, *authors)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	events := make([]nostr.Event, *n)
	base := time.Now().Unix()
	var signing sync.WaitGroup
	for w := range runtime.NumCPU() {
		signing.Go(func() {
			for i := w; i < len(events); i += runtime.NumCPU() {
				at := base
				if *spread {
					at = base - int64(len(events)-i)
				}
				events[i] = nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(at), Content: note300(*seed*1_000_000 + i)}
				events[i].Sign(keys[i%len(keys)])
			}
		})
	}
	signing.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	relays := make([]*nostr.Relay, *conns)
	for i := range relays {
		r, err := nostr.RelayConnect(ctx, *url)
		if err != nil {
			return err
		}
		relays[i] = r
	}
	var next, rejected atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, r := range relays {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(events)) {
					return
				}
				if err := r.Publish(ctx, events[i]); err != nil {
					rejected.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	author, _ := nostr.GetPublicKey(keys[0])
	return json.NewEncoder(os.Stdout).Encode(ingestResult{Events: *n, Rejected: rejected.Load(), Seconds: took, PerSec: float64(*n) / took, Author: author})
}

// reqResult is the latency of one query shape.
type reqResult struct {
	Returned int     `json:"returned"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
}

// reqMain publishes limit events by one author, then times REQ → EOSE for them.
func reqMain(args []string) error {
	fs := flag.NewFlagSet("req", flag.ExitOnError)
	url := fs.String("url", "", "relay ws:// URL")
	limit := fs.Int("limit", 500, "events per query")
	rounds := fs.Int("rounds", 40, "queries to time")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := nostr.RelayConnect(ctx, *url)
	if err != nil {
		return err
	}
	// Time the relay, not this client verifying 500 signatures per query.
	r.AssumeValid = true
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	base := time.Now().Unix() - int64(*limit)
	for i := range *limit {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(base + int64(i)), Content: note300(i)}
		ev.Sign(sk)
		if err := r.Publish(ctx, ev); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	var took []time.Duration
	var got int
	for range *rounds {
		t := time.Now()
		evs, err := r.QuerySync(ctx, nostr.Filter{Authors: []string{pk}, Kinds: []int{1}, Limit: *limit})
		if err != nil {
			return err
		}
		took = append(took, time.Since(t))
		got = len(evs)
	}
	slices.Sort(took)
	return json.NewEncoder(os.Stdout).Encode(reqResult{Returned: got, P50ms: millis(took[len(took)/2]), P99ms: millis(took[len(took)*99/100])})
}
