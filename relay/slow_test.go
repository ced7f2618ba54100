package relay_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/relay"
)

// Issue 9 §4: while one subscriber is stalled (subscribed to everything,
// reading nothing) and another reads 2 KB/s and answers pings, the other
// clients' OKs stay fast, every event reaches a subscriber that keeps up,
// both slow ones are dropped in bounded time, and the heap stays bounded.
// The relay runs with its default outbox and write timeout; precise
// latencies are measured by `go run ./bench` (this asserts the bound loosely
// enough for -race on two busy cores).
func TestSlowSubscribersHoldUpNoOne(t *testing.T) {
	e := newEnv(t, withLimits(func(l *relay.Limits) { l.EventsPerMinute, l.IPEventsPerMinute = 0, 0 }))
	const n, publishers = 2000, 4
	events := make([]nostr.Event, n)
	var signing sync.WaitGroup
	for p := range publishers {
		signing.Go(func() {
			sk, _ := newKey()
			for i := p; i < n; i += publishers {
				events[i] = sign(t, sk, 1, fmt.Sprint(i, strings.Repeat(" a 3 KB note", 256)))
			}
		})
	}
	signing.Wait()

	// (Their REQs are sent, never read back: wire.req would start a reader.)
	stalled := dialWire(t, e.url, 4096)
	stalled.send("REQ", "all", object{"limit": 0})
	slow := dialWire(t, e.url, 4096)
	slow.send("REQ", "all", object{"limit": 0})
	go relaytest.ReadSlowly(slow.c, 2048)
	keeper := dialWire(t, e.url, 0)
	keeper.req("all", object{"limit": 0})
	received := make(chan int)
	go func() {
		got := 0
		for got < n {
			m, err := keeper.read(60 * time.Second)
			if err != nil {
				break
			}
			if m.label == "EVENT" {
				got++
			}
		}
		received <- got
	}()

	var heapBefore runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heapBefore)
	peak := heapBefore.HeapAlloc
	stop := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				var m runtime.MemStats
				runtime.GC() // live memory, not garbage waiting for a collection
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}
		}
	})

	latencies := make([][]time.Duration, publishers)
	var publishing sync.WaitGroup
	start := time.Now()
	for p := range publishers {
		w := dialWire(t, e.url, 0)
		publishing.Go(func() {
			for i := p; i < n; i += publishers {
				t0 := time.Now()
				if ok, reason := w.publish(events[i]); !ok {
					t.Errorf("refused: %s", reason)
					return
				}
				latencies[p] = append(latencies[p], time.Since(t0))
			}
		})
	}
	publishing.Wait()
	took := time.Since(start)
	all := slices.Concat(latencies...)
	slices.Sort(all)
	p50, p99 := all[len(all)/2], all[len(all)*99/100]
	t.Logf("%d events (%.1f MB) in %v: OK latency p50 %v, p99 %v, max %v", n, float64(n*3200)/1e6, took.Round(time.Millisecond), p50, p99, all[len(all)-1])
	if p99 > time.Second {
		t.Errorf("OK latency p99 %v with slow subscribers, want under 1 s", p99)
	}

	// Both slow subscribers go (the outbox bound or the write timeout,
	// whichever comes first); the publishers and the keeper stay.
	testkit.WaitFor(t, 30*time.Second, "the slow subscribers to go", func() bool { return e.rl.Clients() <= publishers+1 })
	if c := e.rl.Clients(); c != publishers+1 {
		t.Errorf("%d clients %v after publishing, want the %d publishers and the keeper", c, time.Since(start), publishers)
	}
	if got := <-received; got != n {
		t.Errorf("the subscriber that keeps up got %d of %d events", got, n)
	}
	close(stop)
	sampling.Wait()
	growth := float64(peak-heapBefore.HeapAlloc) / (1 << 20)
	t.Logf("the live heap grew by at most %.1f MiB", growth)
	if growth > 64 {
		t.Errorf("the heap grew by %.1f MiB; two slow subscribers should cost their bounded outboxes", growth)
	}
}
