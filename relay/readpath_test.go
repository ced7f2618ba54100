package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/relay"
)

// The read path keys what it sent and asks the ban list by raw ids and
// authors. With filters that overlap on every event, enough events that the
// set of those sent grows many times, and a banned author and a banned event
// in the mix, every visible event reaches a subscription once — stored,
// published while the stored ones are read, or live — and a hidden one never.
func TestOverlappingFiltersAndBans(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withLimits(func(l *relay.Limits) { l.EventsPerMinute, l.IPEventsPerMinute, l.MaxLimit = 0, 0, 1000 }))
	ctx := context.Background()
	pub := dialWire(t, e.url, 0)
	skBanned, banned := newKey()
	skB, b := newKey()
	skC, c := newKey()
	at := nostr.Now() - 1000
	var visible, all []string
	var bannedEvent string
	for i := range 40 {
		for _, sk := range []string{skBanned, skB, skC} {
			ev := signAt(t, sk, at+nostr.Timestamp(i), 1, fmt.Sprint("note ", i), nostr.Tag{"t", "x"})
			pub.mustPublish(ev)
			all = append(all, ev.ID)
			switch {
			case sk == skBanned:
			case sk == skB && i == 7:
				bannedEvent = ev.ID
			default:
				visible = append(visible, ev.ID)
			}
		}
	}
	if _, err := e.svc.Ban(ctx, "test", banned, "spam", nil); err != nil {
		t.Fatal(err)
	}
	e.list.BanEvent(bannedEvent)

	filters := []any{
		object{"kinds": []int{1}, "limit": 1000},
		object{"authors": []string{banned, b, c}, "limit": 1000},
		object{"#t": []string{"x"}, "limit": 1000},
		object{"ids": all},
		object{"authors": []string{c}, "kinds": []int{1}, "limit": 1000},
	}
	w := dialWire(t, e.url, 0)
	got := w.req("s", filters...)
	if len(got) != len(visible) || !sameSet(got, visible) {
		t.Fatalf("stored: %d events (%d distinct), want each of the %d visible ones once", len(got), len(distinct(got)), len(visible))
	}
	if n := w.count("c", filters...); n != int64(len(visible)) {
		t.Fatalf("COUNT %d, want %d", n, len(visible))
	}

	// Published while a new subscription reads the stored events: they wait
	// for EOSE, minus those the stored events already included.
	var live []string
	var liveEvents, hiddenLive []nostr.Event
	for i := range 40 {
		ev := signAt(t, skC, at+nostr.Timestamp(100+i), 1, fmt.Sprint("live ", i), nostr.Tag{"t", "x"})
		liveEvents, live = append(liveEvents, ev), append(live, ev.ID)
		hiddenLive = append(hiddenLive, signAt(t, skBanned, at+nostr.Timestamp(100+i), 1, fmt.Sprint("hidden live ", i), nostr.Tag{"t", "x"}))
	}
	sub := dialWire(t, e.url, 0)
	var wg sync.WaitGroup
	var sent atomic.Int32
	wg.Go(func() {
		for i := range liveEvents {
			pub.send("EVENT", liveEvents[i])
			// The service path skips the write policy, so only the read
			// side's ban check keeps these from readers.
			if err := e.rl.Publish(ctx, &hiddenLive[i]); err != nil {
				t.Error(err)
			}
			sent.Add(1)
		}
	})
	testkit.WaitFor(t, 10*time.Second, "the publishing to be under way", func() bool { return sent.Load() >= 2 })
	seen := map[string]int{}
	for _, id := range sub.req("p", filters[:3]...) {
		seen[id]++
	}
	wg.Wait()
	want := append(slices.Clone(visible), live...)
	for delivered := 0; len(seen) < len(want) && delivered < 2*len(want); delivered++ {
		m := sub.expect("EVENT")
		var ev nostr.Event
		if err := json.Unmarshal(m.parts[2], &ev); err != nil {
			t.Fatalf("bad event in %s", m)
		}
		seen[ev.ID]++
	}
	sub.quiet(300 * time.Millisecond)
	for id, n := range seen {
		if !slices.Contains(want, id) {
			t.Fatalf("a hidden event %s was delivered", id)
		}
		if n != 1 {
			t.Fatalf("event %s delivered %d times", id, n)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%d events delivered, want %d", len(seen), len(want))
	}
}

func distinct(ids []string) []string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return slices.Compact(s)
}

func sameSet(a, b []string) bool { return slices.Equal(distinct(a), distinct(b)) }
