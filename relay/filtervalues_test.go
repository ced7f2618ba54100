package relay_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/relay"
)

// hexValues are n distinct 64-character hex values, different for each from.
func hexValues(from, n int) []string {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprintf("%064x", from+i)
	}
	return vs
}

// tagFilter names n values of the "e" tag, none an event of the test has.
func tagFilter(from, n int) object { return object{"#e": hexValues(from, n), "limit": 0} }

// The filter values a connection's and an address's open subscriptions name
// are bounded: a REQ beyond either bound is refused with CLOSED, replacing,
// closing and disconnecting give values back, and a refused REQ ends the
// subscription it would have replaced.
func TestFilterValueLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withLimits(func(l *relay.Limits) { l.MaxFilterValues, l.IPFilterValues = 100, 250 }))
	a := dialWire(t, e.url, 0)

	t.Run("per connection", func(t *testing.T) {
		a.req("a1", tagFilter(0, 60))
		a.req("a2", tagFilter(100, 30), object{"kinds": []int{1, 7}, "authors": hexValues(200, 8), "limit": 0}) // 100 in all
		a.send("REQ", "a3", object{"since": 1, "limit": 0})                                                     // naming nothing, it counts 1
		if reason := a.refused("a3", "rate-limited:"); !strings.Contains(reason, "101") || !strings.Contains(reason, "100") {
			t.Errorf("reason %q does not say 101 values of 100", reason)
		}
		a.send("REQ", "big", tagFilter(0, 101))
		a.refused("big", "invalid:")
		a.req("a1", tagFilter(0, 50)) // replacing frees the replaced one's values
		a.req("a3", object{"ids": hexValues(300, 10), "limit": 0})
		a.send("CLOSE", "a2")
		a.req("a4", tagFilter(400, 40))
		if got := e.rl.Stats().FilterValues; got != 100 {
			t.Errorf("Stats().FilterValues = %d, want 100", got)
		}
	})
	t.Run("a refused REQ ends the subscription it would replace", func(t *testing.T) {
		sk, pk := newKey()
		a.send("CLOSE", "a4")
		a.req("a4", object{"authors": []string{pk}, "limit": 0})
		a.send("REQ", "a4", tagFilter(0, 101))
		a.refused("a4", "invalid:")
		dialWire(t, e.url, 0).mustPublish(sign(t, sk, 1, "after the refusal"))
		a.quiet(300 * time.Millisecond)
		a.req("a4", tagFilter(400, 40)) // and gave its values back
	})
	t.Run("per address", func(t *testing.T) {
		b, c := dialWire(t, e.url, 0), dialWire(t, e.url, 0)
		b.req("b1", tagFilter(1000, 100))
		c.req("c1", tagFilter(2000, 50)) // 250 from the address
		c.send("REQ", "c2", tagFilter(3000, 1))
		if reason := c.refused("c2", "rate-limited:"); !strings.Contains(reason, "address") {
			t.Errorf("reason %q does not name the address", reason)
		}
		b.c.Close()
		waitClients(t, e.rl, 2) // a and c (the publisher above has gone with its subtest)
		c.req("c2", tagFilter(3000, 50))
		d := dialWire(t, e.url, 0)
		d.req("d1", tagFilter(4000, 50)) // 250 again
		d.send("REQ", "d2", tagFilter(5000, 1))
		if reason := d.refused("d2", "rate-limited:"); !strings.Contains(reason, "address") {
			t.Errorf("reason %q does not name the address", reason)
		}
	})
	if got := e.rl.Stats().FilterValuesRefused; got != 5 {
		t.Errorf("Stats().FilterValuesRefused = %d, want the 5 refusals", got)
	}
}

// Subscriptions ended by CLOSE, by a REQ replacing them, by a refusal or
// by a disconnect leave nothing in the relay's index; while they are open,
// events reach exactly the ones that match.
func TestSubscriptionsLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, pub := dialWire(t, e.url, 0), dialWire(t, e.url, 0), dialWire(t, e.url, 0)
	sk, pk := newKey()
	note := sign(t, sk, 1, "tagged", nostr.Tag{"t", "outpost"}, nostr.Tag{"e", hexValues(7, 1)[0]})
	filters := []object{
		{"ids": []string{note.ID}}, {"authors": []string{pk}, "kinds": []int{1}}, {"kinds": []int{1}},
		{"#t": []string{"outpost", "nostr"}, "#e": hexValues(0, 20)}, {"since": 1}, {},
		{"#e": hexValues(100, 190)}, {"authors": hexValues(500, 300)}, {"kinds": []int{7}},
	}
	matches := map[string]bool{"f0": true, "f1": true, "f2": true, "f3": true, "f4": true, "f5": true}
	for _, w := range []*wire{a, b} {
		for i, f := range filters {
			w.req(fmt.Sprint("f", i), withLimit(f, 0))
		}
		w.req("all", filters[6], filters[7], filters[8], filters[2])
	}
	pub.mustPublish(note)
	for _, w := range []*wire{a, b} {
		got := map[string]bool{}
		for range len(matches) + 1 {
			m := w.expect("EVENT")
			if got[m.str(1)] {
				t.Fatalf("%s reached twice", m.str(1))
			}
			got[m.str(1)] = true
		}
		w.quiet(200 * time.Millisecond)
		for i := range filters {
			if id := fmt.Sprint("f", i); got[id] != matches[id] {
				t.Errorf("subscription %s (%v) reached: %v", id, filters[i], got[id])
			}
		}
		if !got["all"] {
			t.Error(`subscription "all" (one filter of 4 matches) not reached`)
		}
	}
	if n := relay.IndexEntries(e.rl); n == 0 {
		t.Fatal("nothing indexed while subscriptions are open")
	}
	for i := range filters {
		a.send("CLOSE", fmt.Sprint("f", i))
	}
	a.req("all", object{"authors": []string{pk}, "limit": 0}) // replaces
	a.send("REQ", "all", 7)                                   // refused, ends it
	a.refused("all", "invalid:")
	a.send("REQ", "all", object{"ids": []string{}})
	a.expect("EOSE")
	a.send("CLOSE", "all")
	b.c.Close()
	waitClients(t, e.rl, 2)
	a.req("sync", object{"limit": 0}) // a's CLOSEs are done once this is answered
	a.send("CLOSE", "sync")
	testkit.WaitFor(t, 10*time.Second, "no index entry and no filter value held once all are closed", func() bool {
		return relay.IndexEntries(e.rl) == 0 && e.rl.Stats().FilterValues == 0
	})
}
