package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/relay"
)

// A burst of republished lists (N versions of M addressable events) while a
// reader's stored events are read, and again while it reads nothing at
// all: the reader is not dropped, ends with exactly the M newest, and is
// never sent a version of an address older than, or the same as, one it
// has (nor two versions of one address before EOSE).
func TestReplacementBurst(t *testing.T) {
	t.Parallel()
	const outbox = 256 << 10
	e := newEnv(t, func(c *relay.Config) {
		c.OutboxBytes, c.WriteTimeout = outbox, time.Minute // the reader stalls on purpose
		l := relay.DefaultLimits()
		l.EventsPerMinute, l.IPEventsPerMinute = 0, 0
		c.Limits = &l
	})
	_, pk := newKey()
	padding := strings.Repeat("x", 8<<10)
	publish := func(ev nostr.Event) {
		t.Helper()
		if err := e.rl.Publish(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 { // 800 KB of stored notes to read before EOSE
		publish(unsigned(pk, nostr.Timestamp(1000+i), 1, fmt.Sprint(i, padding)))
	}
	const m = 10 // 80 KB of pages, well within the outbox
	round := 0
	republish := func(rounds int) {
		for range rounds {
			round++
			for i := range m {
				ev := nostr.Event{PubKey: pk, CreatedAt: nostr.Timestamp(2000 + round), Kind: 30000,
					Tags: nostr.Tags{{"d", fmt.Sprint("page-", i)}}, Content: fmt.Sprintf("%d %s", round, padding)}
				ev.ID = ev.GetID()
				publish(ev)
			}
		}
	}
	republish(1)

	r := dialWire(t, e.url, 16<<10)
	r.send("REQ", "pages", object{"authors": []string{pk}, "limit": 500})
	testkit.WaitFor(t, 10*time.Second, "the subscription to open", func() bool { return relay.IndexEntries(e.rl) > 0 })
	republish(10) // 800 KB arrive while the stored events wait for the reader
	have := map[string]int{}
	beforeEOSE := readPages(t, r, have, func(m msg) bool { return m.label == "EOSE" })
	for d, n := range beforeEOSE {
		if n > 1 {
			t.Fatalf("%d versions of %s before EOSE", n, d)
		}
	}
	republish(40) // 3.2 MB while the reader reads nothing
	readPages(t, r, have, func(msg) bool {
		for i := range m {
			if have[fmt.Sprint("page-", i)] != round {
				return false
			}
		}
		return true
	})
}

// readPages reads r's messages with the connection's own reads (no reading
// ahead, so the relay sees a reader as slow as the test) until done says
// so; have holds the round of the newest version of each page received,
// and a version no newer than it fails the test. It returns how many
// versions of each page it read.
func readPages(t *testing.T, r *wire, have map[string]int, done func(msg) bool) map[string]int {
	t.Helper()
	got := map[string]int{}
	for {
		r.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, b, err := r.c.ReadMessage()
		if err != nil {
			t.Fatalf("the reader lost its connection: %v (have %v)", err, have)
		}
		var m msg
		if err := json.Unmarshal(b, &m.parts); err != nil || len(m.parts) == 0 {
			t.Fatalf("not a relay message: %.200s", b)
		}
		json.Unmarshal(m.parts[0], &m.label)
		if m.label == "EVENT" {
			var ev nostr.Event
			json.Unmarshal(m.parts[2], &ev)
			if ev.Kind == 30000 {
				d, round := ev.Tags.GetD(), 0
				fmt.Sscan(ev.Content, &round)
				if round <= have[d] {
					t.Fatalf("%s: version %d sent after version %d", d, round, have[d])
				}
				have[d] = round
				got[d]++
			}
		}
		if done(m) {
			return got
		}
	}
}
