package relay_test

// The conformance suite: every NIP the relay lists in NIP-11, and every
// limit it advertises, exercised over the wire with raw frames (where a
// client library would hide what the relay sends) and go-nostr clients.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip45"
	"github.com/nbd-wtf/go-nostr/nip45/hyperloglog"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/relay"
)

var newKey = relaytest.NewKey

func sign(t *testing.T, sk string, kind int, content string, tags ...nostr.Tag) nostr.Event {
	return relaytest.Sign(t, sk, kind, content, tags...)
}

func signAt(t *testing.T, sk string, at nostr.Timestamp, kind int, content string, tags ...nostr.Tag) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: kind, CreatedAt: at, Content: content, Tags: tags}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// unsigned is an event with its id but no signature, for the service's own
// path (Publish), which does not verify.
func unsigned(pk string, at nostr.Timestamp, kind int, content string) nostr.Event {
	ev := nostr.Event{PubKey: pk, CreatedAt: at, Kind: kind, Content: content, Tags: nostr.Tags{}}
	ev.ID = ev.GetID()
	return ev
}

type object = map[string]any

// nip11 fetches the relay's information document.
func nip11(t *testing.T, url string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/nostr+json" {
		t.Errorf("NIP-11 Content-Type %q", ct)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Error("NIP-11 without CORS headers")
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestNIP11(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := nip11(t, e.url)
	if doc["self"] != e.service {
		t.Errorf("self = %v, want the service key %s", doc["self"], e.service)
	}
	if _, ok := doc["pubkey"]; ok {
		t.Errorf("pubkey %v present with no operator key configured", doc["pubkey"])
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case string:
			if v == "" {
				t.Errorf("%s is an empty string; unknown fields are left out", path)
			}
		case map[string]any:
			for k, x := range v {
				walk(path+"."+k, x)
			}
		case nil:
			t.Errorf("%s is null", path)
		}
	}
	walk("", doc)
	var nips []int
	for _, n := range doc["supported_nips"].([]any) {
		nips = append(nips, int(n.(float64)))
	}
	if !slices.IsSorted(nips) {
		t.Errorf("supported_nips %v not sorted", nips)
	}
	if want := []int{1, 9, 11, 40, 42, 45, 56, 70, 77, 86}; !slices.Equal(nips, want) {
		t.Errorf("supported_nips = %v, want %v", nips, want)
	}
	lim := doc["limitation"].(map[string]any)
	d := relay.DefaultLimits()
	for field, want := range map[string]int{"max_message_length": d.MaxMessageLength, "max_subscriptions": d.MaxSubscriptions,
		"max_filters": d.MaxFilters, "max_limit": d.MaxLimit, "default_limit": d.DefaultLimit, "max_subid_length": 64,
		"max_event_tags": d.MaxEventTags, "max_content_length": d.MaxContentLength, "created_at_upper_limit": 900} {
		if got, _ := lim[field].(float64); int(got) != want {
			t.Errorf("limitation.%s = %v, want %d", field, lim[field], want)
		}
	}
	for _, f := range []string{"auth_required", "payment_required", "restricted_writes"} {
		if lim[f] != false {
			t.Errorf("limitation.%s = %v, want false", f, lim[f])
		}
	}

	_, operator := newKey()
	e2 := newEnv(t, func(c *relay.Config) {
		c.OperatorPub = operator
		c.Limits = &relay.Limits{MaxLimit: 10, DefaultLimit: 5}
	})
	doc = nip11(t, e2.url)
	if doc["pubkey"] != operator || doc["self"] != e2.service {
		t.Errorf("pubkey %v self %v, want the operator %s and the service %s", doc["pubkey"], doc["self"], operator, e2.service)
	}
	lim = doc["limitation"].(map[string]any)
	for _, f := range []string{"max_subscriptions", "max_filters", "max_event_tags", "max_content_length"} {
		if v, ok := lim[f]; ok {
			t.Errorf("limitation.%s = %v advertised while off", f, v)
		}
	}
	if lim["max_message_length"] != float64(16<<20) {
		t.Errorf("with no message limit max_message_length = %v, want the frame limit %d", lim["max_message_length"], 16<<20)
	}
}

// Every limit NIP-11 advertises is the one enforced: at the limit accepted,
// one over refused with its NIP-01 prefix.
func TestAdvertisedLimitsAreEnforced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withLimits(func(l *relay.Limits) {
		*l = relay.Limits{MaxMessageLength: 4000, MaxSubscriptions: 3, MaxFilters: 2, MaxLimit: 4, DefaultLimit: 2,
			MaxEventTags: 5, MaxContentLength: 100}
	}))
	lim := nip11(t, e.url)["limitation"].(map[string]any)
	n := func(f string) int { return int(lim[f].(float64)) }
	w := dialWire(t, e.url, 0)
	sk, pk := newKey()

	t.Run("max_content_length counts characters", func(t *testing.T) {
		max := n("max_content_length")
		w.mustPublish(sign(t, sk, 1, strings.Repeat("é", max)))
		ok, reason := w.publish(sign(t, sk, 1, strings.Repeat("a", max+1)))
		if ok || !strings.HasPrefix(reason, "invalid:") {
			t.Fatalf("content of %d characters: %v %q", max+1, ok, reason)
		}
	})
	t.Run("max_event_tags", func(t *testing.T) {
		max := n("max_event_tags")
		tags := make([]nostr.Tag, max+1)
		for i := range tags {
			tags[i] = nostr.Tag{"t", strconv.Itoa(i)}
		}
		w.mustPublish(sign(t, sk, 1, "tags at the limit", tags[:max]...))
		if ok, reason := w.publish(sign(t, sk, 1, "one tag too many", tags...)); ok || !strings.HasPrefix(reason, "invalid:") {
			t.Fatalf("%d tags: %v %q", max+1, ok, reason)
		}
	})
	t.Run("max_message_length", func(t *testing.T) {
		max := n("max_message_length")
		// An EVENT over the limit but still readable is answered OK false.
		big := sign(t, sk, 1, strings.Repeat("x", 90), nostr.Tag{"alt", strings.Repeat("y", max)})
		if ok, reason := w.publish(big); ok || !strings.HasPrefix(reason, "invalid:") || !strings.Contains(reason, "max_message_length") {
			t.Fatalf("EVENT over max_message_length: %v %q", ok, reason)
		}
		w.send("REQ", "big", object{"authors": []string{strings.Repeat("a", max)}})
		w.refused("big", "invalid:")
		w.send("COUNT", "bigc", object{"authors": []string{strings.Repeat("a", max)}})
		w.refused("bigc", "invalid:")
		// At the limit exactly it is read.
		prefix, suffix := `["REQ","edge",{"kinds":[1],"#x":["`, `"]}]`
		w.sendRaw(prefix + strings.Repeat("z", max-len(prefix)-len(suffix)) + suffix)
		if m := w.expect("EOSE"); m.str(1) != "edge" {
			t.Fatalf("REQ of exactly max_message_length: %s", m)
		}
		w.send("CLOSE", "edge")
		// Far beyond it, the connection is closed (1009) after the frame's
		// header; the rest is read and discarded, so the client's write
		// completes and it reads the close frame (TestOverLongFrameCloses1009).
		x := dialWire(t, e.url, 0)
		err := x.c.WriteMessage(websocket.TextMessage, []byte(`["EVENT",{"content":"`+strings.Repeat("x", 3*max)+`"}]`))
		if err == nil {
			_, err = x.read(10 * time.Second)
		}
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("a frame of 3× max_message_length: %v, want close 1009", err)
		}
	})
	t.Run("max_subid_length", func(t *testing.T) {
		max := n("max_subid_length")
		id := strings.Repeat("ж", max)
		if got := w.req(id, object{"ids": []string{}}); len(got) != 0 {
			t.Fatal(got)
		}
		w.send("CLOSE", id)
		w.send("REQ", id+"x", object{})
		w.refused(id+"x", "invalid:")
		w.send("REQ", "", object{})
		w.refused("", "invalid:")
		w.send("REQ", 7, object{})
		if m := w.expect("NOTICE"); !strings.HasPrefix(m.str(1), "invalid:") {
			t.Fatal(m)
		}
	})
	t.Run("max_filters", func(t *testing.T) {
		max := n("max_filters")
		filters := make([]any, max+1)
		for i := range filters {
			filters[i] = object{"kinds": []int{i}}
		}
		w.req("f", filters[:max]...)
		w.send("CLOSE", "f")
		w.send(append([]any{"REQ", "f"}, filters...)...)
		w.refused("f", "invalid:")
		w.send(append([]any{"COUNT", "fc"}, filters...)...)
		w.refused("fc", "invalid:")
	})
	t.Run("max_subscriptions", func(t *testing.T) {
		max := n("max_subscriptions")
		for i := range max {
			w.req(fmt.Sprint("s", i), object{"limit": 0})
		}
		w.send("REQ", "one-more", object{"limit": 0})
		w.refused("one-more", "rate-limited:")
		w.req("s0", object{"limit": 0}) // replacing one is fine
		w.send("CLOSE", "s1")
		w.req("one-more", object{"limit": 0})
		for i := range max {
			w.send("CLOSE", fmt.Sprint("s", i))
		}
		w.send("CLOSE", "one-more")
	})
	t.Run("max_limit and default_limit", func(t *testing.T) {
		var ids []string
		base := nostr.Now() - 100
		for i := range 6 {
			ev := signAt(t, sk, base+nostr.Timestamp(i), 7, "+")
			w.mustPublish(ev)
			ids = append(ids, ev.ID)
		}
		slices.Reverse(ids) // newest first
		mine := object{"authors": []string{pk}, "kinds": []int{7}}
		if got := w.req("l", withLimit(mine, 5000)); !slices.Equal(got, ids[:n("max_limit")]) {
			t.Fatalf("limit 5000 gave %d events, want the newest %d (max_limit)", len(got), n("max_limit"))
		}
		if got := w.req("l", mine); !slices.Equal(got, ids[:n("default_limit")]) {
			t.Fatalf("no limit gave %d events, want the newest %d (default_limit)", len(got), n("default_limit"))
		}
		if got := w.req("l", withLimit(mine, 1)); !slices.Equal(got, ids[:1]) {
			t.Fatalf("limit 1 gave %v", got)
		}
		// A filter that bounds itself (by ids) is not cut to default_limit.
		if got := w.req("l", object{"ids": ids}); len(got) != len(ids) {
			t.Fatalf("6 ids gave %d events", len(got))
		}
		w.send("CLOSE", "l")
	})
	t.Run("created_at_upper_limit", func(t *testing.T) {
		upper := nostr.Timestamp(n("created_at_upper_limit"))
		w.mustPublish(signAt(t, sk, nostr.Now()+upper-5, 1, "soon"))
		if ok, reason := w.publish(signAt(t, sk, nostr.Now()+upper+60, 1, "later")); ok || !strings.HasPrefix(reason, "invalid:") {
			t.Fatalf("created_at beyond the upper limit: %v %q", ok, reason)
		}
	})
}

func withLimit(f object, n int) object {
	g := object{"limit": n}
	for k, v := range f {
		g[k] = v
	}
	return g
}

// NIP-01: an event reaches a subscription once, however many of its filters
// or filter values it matches, stored or live.
func TestOncePerSubscription(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sub := dialWire(t, e.url, 0)
	pub := dialWire(t, e.url, 0)
	sk, pk := newKey()
	stored := sign(t, sk, 1, "stored", nostr.Tag{"t", "a"}, nostr.Tag{"t", "b"})
	pub.mustPublish(stored)
	filters := []any{object{"#t": []string{"a", "b"}}, object{"kinds": []int{1}, "authors": []string{pk}}, object{"ids": []string{stored.ID}}}
	if got := sub.req("s", filters...); !slices.Equal(got, []string{stored.ID}) {
		t.Fatalf("stored: got %v, want the event once", got)
	}
	live := sign(t, sk, 1, "live", nostr.Tag{"t", "a"}, nostr.Tag{"t", "b"})
	pub.mustPublish(live)
	if m := sub.expect("EVENT"); m.str(1) != "s" || !strings.Contains(string(m.parts[2]), live.ID) {
		t.Fatalf("live: %s", m)
	}
	sub.quiet(300 * time.Millisecond)
}

// Publishing while subscribing: every event is delivered to the
// subscription exactly once, before EOSE (stored) or after it (live).
func TestNothingLostOrDoubledAroundEOSE(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withLimits(func(l *relay.Limits) { l.EventsPerMinute, l.IPEventsPerMinute, l.MaxLimit = 0, 0, 1000 }))
	sk, pk := newKey()
	const n = 300
	events := make([]nostr.Event, n)
	for i := range events {
		events[i] = sign(t, sk, 1, fmt.Sprint("note ", i))
	}
	pub := dialWire(t, e.url, 0)
	done := make(chan struct{})
	var sent atomic.Int32
	go func() {
		defer close(done)
		for _, ev := range events {
			pub.send("EVENT", ev)
			sent.Add(1)
		}
	}()
	sub := dialWire(t, e.url, 0)
	// The REQ goes while the events are still coming.
	testkit.WaitFor(t, 10*time.Second, "the publishing to be under way", func() bool { return sent.Load() >= n/10 })
	seen := map[string]int{}
	for _, id := range sub.req("all", object{"authors": []string{pk}, "limit": 1000}) {
		seen[id]++
	}
	<-done
	for len(seen) < n {
		m := sub.next()
		if m.label != "EVENT" {
			t.Fatalf("got %s", m)
		}
		var ev nostr.Event
		json.Unmarshal(m.parts[2], &ev)
		seen[ev.ID]++
	}
	sub.quiet(300 * time.Millisecond)
	for _, ev := range events {
		if seen[ev.ID] != 1 {
			t.Fatalf("event %q delivered %d times", ev.Content, seen[ev.ID])
		}
	}
}

// An event committed but not yet broadcast when a REQ reads it (the
// services' hooks run in between) reaches that REQ once: stored, and not
// again live after EOSE.
func TestCommittedNotYetBroadcastSentOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sk, pk := newKey()
	ev := sign(t, sk, 1, "held between its commit and its broadcast")
	entered, release := make(chan struct{}), make(chan struct{})
	e.rl.OnEventSaved = append(e.rl.OnEventSaved, func(_ context.Context, saved *nostr.Event) {
		if saved.ID == ev.ID {
			close(entered)
			<-release
		}
	})
	dialWire(t, e.url, 0).send("EVENT", ev)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the event was not committed")
	}
	sub := dialWire(t, e.url, 0)
	sub.send("REQ", "s", object{"authors": []string{pk}})
	// The broadcast is let go at EOSE, or after half a second without one
	// (a relay that waits for the broadcast sends none before); the wait
	// only picks the interleaving, either way the event must come once.
	var got []msg
	if m, err := sub.read(500 * time.Millisecond); err == nil {
		got = append(got, m)
	}
	close(release)
	for len(got) == 0 || got[len(got)-1].label != "EOSE" {
		got = append(got, sub.next())
	}
	if len(got) != 2 || got[0].label != "EVENT" || !strings.Contains(string(got[0].parts[2]), ev.ID) {
		t.Fatalf("before EOSE: %v, want the event once", got)
	}
	sub.quiet(300 * time.Millisecond)
}

func TestSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	pub := dialWire(t, e.url, 0)
	sk, pk := newKey()
	note := sign(t, sk, 1, "stored note")
	pub.mustPublish(note)

	t.Run("limit 0: EOSE at once, then live events", func(t *testing.T) {
		if got := w.req("z", object{"authors": []string{pk}, "limit": 0}); len(got) != 0 {
			t.Fatalf("limit 0 sent %v", got)
		}
		live := sign(t, sk, 1, "live")
		pub.mustPublish(live)
		if m := w.expect("EVENT"); !strings.Contains(string(m.parts[2]), live.ID) {
			t.Fatal(m)
		}
		w.send("CLOSE", "z")
	})
	t.Run("a REQ with an open id replaces it; CLOSE ends it", func(t *testing.T) {
		w.req("r", object{"authors": []string{pk}, "kinds": []int{1}, "limit": 0})
		w.req("r", object{"authors": []string{pk}, "kinds": []int{7}, "limit": 0})
		pub.mustPublish(sign(t, sk, 1, "kind 1, not wanted any more"))
		reaction := sign(t, sk, 7, "+")
		pub.mustPublish(reaction)
		if m := w.expect("EVENT"); !strings.Contains(string(m.parts[2]), reaction.ID) {
			t.Fatalf("after replacing: %s", m)
		}
		w.send("CLOSE", "r")
		// Messages are handled in order, so once this is answered the CLOSE
		// is done; it matches nothing, so it may stay open while the next
		// event goes out (its own CLOSE travels beside that event).
		w.req("sync", object{"ids": []string{}})
		w.send("CLOSE", "sync")
		pub.mustPublish(sign(t, sk, 7, "-"))
		w.quiet(300 * time.Millisecond)
	})
	t.Run("filters that match nothing", func(t *testing.T) {
		for _, f := range []object{{"ids": []string{}}, {"kinds": []int{}}, {"#e": []string{}}, {"since": 200, "until": 100}} {
			if got := w.req("n", f); len(got) != 0 {
				t.Fatalf("%v matched %v", f, got)
			}
		}
		w.send("CLOSE", "n")
	})
	t.Run("exact tag values", func(t *testing.T) {
		long := sign(t, sk, 1, "abcdef", nostr.Tag{"t", "abcdef"})
		short := sign(t, sk, 1, "abc", nostr.Tag{"t", "abc"})
		pub.mustPublish(long, short)
		if got := w.req("t", object{"#t": []string{"abc"}}); !slices.Equal(got, []string{short.ID}) {
			t.Fatalf(`#t ["abc"] gave %v, want only the event tagged abc`, got)
		}
		w.send("CLOSE", "t")
	})
	t.Run("refusals", func(t *testing.T) {
		w.send("REQ", "x")
		w.refused("x", "invalid:")
		w.send("REQ", "x", "not a filter")
		w.refused("x", "invalid:")
		w.send("REQ", "x", object{"kinds": "one"})
		w.refused("x", "invalid:")
		w.send("REQ", "x", object{"search": "nostr"})
		w.refused("x", "unsupported:")
		w.send("CLOSE", 5)
		w.expect("NOTICE")
	})
	t.Run("malformed messages get a NOTICE", func(t *testing.T) {
		for _, raw := range []string{`not json`, `{"kind":1}`, `[]`, `[1,2]`, `["HELLO"]`} {
			w.sendRaw(raw)
			if m := w.expect("NOTICE"); !strings.HasPrefix(m.str(1), "invalid:") {
				t.Fatalf("%s: %s", raw, m)
			}
		}
		w.c.WriteMessage(websocket.BinaryMessage, []byte(`["REQ","b",{}]`))
		w.expect("NOTICE")
	})
}

func TestEventChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, _ := newKey()
	good := sign(t, sk, 1, "hello")
	tests := []struct {
		name   string
		ev     func() nostr.Event
		ok     bool
		prefix string
	}{
		{"accepted", func() nostr.Event { return good }, true, ""},
		{"again: duplicate", func() nostr.Event { return good }, true, "duplicate:"},
		{"wrong id", func() nostr.Event { ev := sign(t, sk, 1, "x"); ev.Content = "y"; return ev }, false, "invalid:"},
		{"bad signature", func() nostr.Event {
			ev := sign(t, sk, 1, "x")
			ev.Sig = strings.Repeat("0", 128)
			return ev
		}, false, "invalid:"},
		{"upper-case pubkey", func() nostr.Event {
			ev := sign(t, sk, 1, "x")
			ev.PubKey = strings.ToUpper(ev.PubKey)
			ev.ID = ev.GetID()
			return ev
		}, false, "invalid:"},
		{"kind over 65535", func() nostr.Event { return sign(t, sk, 70000, "x") }, false, "invalid:"},
		{"long single-letter tag value", func() nostr.Event { return sign(t, sk, 1, "x", nostr.Tag{"t", strings.Repeat("v", 1025)}) }, false, "invalid:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := w.publish(tt.ev())
			if ok != tt.ok || !strings.HasPrefix(reason, tt.prefix) {
				t.Fatalf("got %v %q, want %v %q…", ok, reason, tt.ok, tt.prefix)
			}
		})
	}
	w.send("EVENT", object{"content": "no id"})
	w.expect("NOTICE")
	w.sendRaw(`["EVENT",{"id":"abc","kind":"one"}]`)
	if m := w.expect("OK"); m.str(1) != "abc" || !strings.HasPrefix(m.str(3), "invalid:") {
		t.Fatalf("malformed event: %s", m)
	}
}

// An event sent by a client and the same event sent by another relay
// (Ingest) get the same verdict in the same words, for every reason but
// those that are a client's alone (rate limits, authenticating).
func TestSameVerdictFromClientAndUpstream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, _ := newKey()
	held := sign(t, sk, 1, "held")
	deleted := sign(t, sk, 1, "regretted")
	profile := sign(t, sk, 0, `{"name":"new"}`)
	w.mustPublish(held, deleted, sign(t, sk, 5, "", nostr.Tag{"e", deleted.ID}), profile)
	bannedSK, bannedPK := newKey()
	if _, err := e.svc.Ban(context.Background(), "test", bannedPK, "spam", nil); err != nil {
		t.Fatal(err)
	}
	protected := sign(t, sk, 1, "mine", nostr.Tag{"-"})
	repost, _ := protected.MarshalJSON()
	past := strconv.FormatInt(int64(nostr.Now())-1, 10)
	cases := map[string]nostr.Event{
		"held already":     held,
		"older version":    signAt(t, sk, profile.CreatedAt-1, 0, `{"name":"old"}`),
		"deleted":          deleted,
		"wrong id":         func() nostr.Event { ev := sign(t, sk, 1, "x"); ev.Content = "y"; return ev }(),
		"bad signature":    func() nostr.Event { ev := sign(t, sk, 1, "x"); ev.Sig = strings.Repeat("0", 128); return ev }(),
		"kind over 65535":  sign(t, sk, 70000, "x"),
		"long tag value":   sign(t, sk, 1, "x", nostr.Tag{"t", strings.Repeat("v", 1025)}),
		"kind 22242":       sign(t, sk, 22242, "", nostr.Tag{"challenge", "x"}),
		"expired":          sign(t, sk, 1, "x", nostr.Tag{"expiration", past}),
		"bad expiration":   sign(t, sk, 1, "x", nostr.Tag{"expiration", "soon"}),
		"banned author":    sign(t, bannedSK, 1, "x"),
		"protected repost": sign(t, sk, 6, string(repost)),
	}
	for name, ev := range cases {
		ok, reason := w.publish(ev)
		upOK, upReason := e.rl.Ingest(context.Background(), &ev)
		if ok != upOK || reason != upReason {
			t.Errorf("%s: a client got %v %q, upstream %v %q", name, ok, reason, upOK, upReason)
		}
		if ok != (name == "held already") || reason == "" {
			t.Errorf("%s: %v %q", name, ok, reason)
		}
	}
}

// An event with top-level fields NIP-01 does not name ("seenOn", left in by
// some client libraries) is accepted, as strfry does, and stored and served
// without them: the id covers only NIP-01's fields.
func TestUnknownEventFieldsIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, _ := newKey()
	ev := sign(t, sk, 1, "from a client that keeps seenOn")
	raw, _ := json.Marshal(ev)
	extra := map[string]string{
		"trailing":    `,"seenOn":["wss://relay.example"]}`,
		"nested":      `,"meta":{"a":[1,{"b":null}],"c":"}"},"x":1.5}`,
		"first, null": ``,
	}
	for name, tail := range extra {
		t.Run(name, func(t *testing.T) {
			ev := sign(t, sk, 1, "from a client that keeps seenOn: "+name)
			raw, _ := json.Marshal(ev)
			msg := string(raw[:len(raw)-1]) + tail
			if tail == "" {
				msg = `{"_seen":null,` + string(raw[1:])
			}
			w.sendRaw(`["EVENT",` + msg + `]`)
			m := w.expect("OK")
			if m.str(1) != ev.ID || string(m.parts[2]) != "true" {
				t.Fatalf("got %s, want OK true", m)
			}
			w.send("REQ", "s", map[string]any{"ids": []string{ev.ID}})
			got := w.expect("EVENT")
			var fields map[string]any
			if json.Unmarshal(got.parts[2], &fields); len(fields) != 7 {
				t.Fatalf("served with other fields than NIP-01's: %s", got.parts[2])
			}
			w.expect("EOSE")
			w.send("CLOSE", "s")
		})
	}
	// A malformed known field is still refused.
	bad := strings.Replace(string(raw), `"kind":1`, `"kind":"one"`, 1)
	w.sendRaw(`["EVENT",` + strings.TrimSuffix(bad, "}") + `,"seenOn":[]}]`)
	if m := w.expect("OK"); m.str(1) != ev.ID || !strings.HasPrefix(m.str(3), "invalid:") {
		t.Fatalf("a malformed kind with an unknown field: %s", m)
	}
}

// NIP-45: COUNT counts the union of its filters.
func TestNIP45(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, pk := newKey()
	a := sign(t, sk, 1, "a", nostr.Tag{"t", "x"})
	b := sign(t, sk, 1, "b")
	c := sign(t, sk, 7, "+")
	w.mustPublish(a, b, c)
	mine := []string{pk}
	if n := w.count("c", object{"authors": mine, "kinds": []int{1}}, object{"authors": mine, "#t": []string{"x"}}, object{"authors": mine, "kinds": []int{7}}); n != 3 {
		t.Fatalf("union of three overlapping filters counted %d, want 3", n)
	}
	if n := w.count("c", object{"authors": mine, "kinds": []int{1}, "limit": 1}); n != 2 {
		t.Fatalf("one filter counted %d, want 2", n)
	}
	if n := w.count("c", object{"ids": []string{}}); n != 0 {
		t.Fatalf("an empty ids list counted %d", n)
	}
	w.send("COUNT", strings.Repeat("c", 65), object{})
	w.refused(strings.Repeat("c", 65), "invalid:")
}

// NIP-45's HyperLogLog: a COUNT of one filter the NIP names (reactions to
// an event, followers of a key) also answers the 256 registers of the
// events' authors at the filter's offset, so that a client can merge
// relays' counts without counting an author twice; hidden (banned) authors
// are left out of both. Any other COUNT answers the count alone.
func TestNIP45HyperLogLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	target := sign(t, nostr.GeneratePrivateKey(), 1, "react to me")
	w.mustPublish(target)
	offset := nip45.HyperLogLogEventPubkeyOffsetForFilter(nostr.Filter{Kinds: []int{7}, Tags: nostr.TagMap{"e": {target.ID}}})
	want := hyperloglog.New(offset)
	var banned string
	for i := range 60 {
		sk, pk := newKey()
		w.mustPublish(sign(t, sk, 7, "+", nostr.Tag{"e", target.ID}))
		if i == 0 {
			banned = pk
			continue
		}
		want.Add(pk)
	}
	if _, err := e.svc.Ban(context.Background(), "test", banned, "spam", nil); err != nil {
		t.Fatal(err)
	}
	countHLL := func(filters ...any) (int64, string) {
		t.Helper()
		w.send(append([]any{"COUNT", "h"}, filters...)...)
		m := w.expect("COUNT")
		var body struct {
			Count *int64 `json:"count"`
			HLL   string `json:"hll"`
		}
		if json.Unmarshal(m.parts[2], &body) != nil || body.Count == nil {
			t.Fatalf("bad COUNT answer %s", m)
		}
		return *body.Count, body.HLL
	}
	reactions := object{"kinds": []int{7}, "#e": []string{target.ID}}
	n, hll := countHLL(reactions)
	if n != 59 {
		t.Errorf("counted %d reactions, want 59 (one author banned)", n)
	}
	if got := hex.EncodeToString(want.GetRegisters()); hll != got {
		t.Errorf("hll\n%s\nwant the registers of the 59 authors at offset %d\n%s", hll, offset, got)
	}
	regs, err := hex.DecodeString(hll)
	if err != nil || len(regs) != 256 {
		t.Fatalf("hll %q is not 256 hex-encoded registers", hll)
	}
	if est := hyperloglog.NewWithRegisters(regs, offset).Count(); est < 50 || est > 70 {
		t.Errorf("the registers estimate %d authors, want about 59", est)
	}
	// go-nostr's client reads the same registers.
	c, _ := relaytest.Dial(t, e.url)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, regs, err := c.Count(ctx, nostr.Filters{{Kinds: []int{7}, Tags: nostr.TagMap{"e": {target.ID}}}}); err != nil || n != 59 || hex.EncodeToString(regs) != hll {
		t.Errorf("go-nostr's Count: %d, %x, %v", n, regs, err)
	}
	for _, filters := range [][]any{
		{object{"kinds": []int{1}}},            // not a case the NIP names
		{reactions, object{"kinds": []int{7}}}, // more than one filter
		{object{"kinds": []int{7}, "#e": []string{target.ID}, "authors": []string{banned}}}, // narrowed
	} {
		if _, hll := countHLL(filters...); hll != "" {
			t.Errorf("COUNT %v answered an hll", filters)
		}
	}
}

// NIP-42 and NIP-70.
func TestNIP42(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	watcher := dialWire(t, e.url, 0)
	watcher.req("auth-events", object{"kinds": []int{22242}})
	sk, pk := newKey()
	relayURL := wsURL(e.url)

	t.Run("kind 22242 is never stored or broadcast", func(t *testing.T) {
		ev := sign(t, sk, 22242, "", nostr.Tag{"relay", relayURL}, nostr.Tag{"challenge", "x"})
		if ok, reason := w.publish(ev); ok || !strings.HasPrefix(reason, "invalid:") {
			t.Fatalf("kind 22242 as an EVENT: %v %q", ok, reason)
		}
		watcher.quiet(200 * time.Millisecond)
		if got := w.req("q", object{"kinds": []int{22242}}); len(got) != 0 {
			t.Fatalf("stored: %v", got)
		}
	})
	protected := sign(t, sk, 1, "only from me", nostr.Tag{"-"})
	var challenge string
	t.Run("a protected event asks for AUTH", func(t *testing.T) {
		w.send("EVENT", protected)
		m := w.expect("AUTH")
		challenge = m.str(1)
		m = w.expect("OK")
		if m.str(1) != protected.ID || !strings.HasPrefix(m.str(3), "auth-required:") {
			t.Fatalf("got %s", m)
		}
	})
	auth := func(sk, relayTag, challenge string) (bool, string) {
		ev := sign(t, sk, 22242, "", nostr.Tag{"relay", relayTag}, nostr.Tag{"challenge", challenge})
		w.send("AUTH", ev)
		m := w.expect("OK")
		var ok bool
		json.Unmarshal(m.parts[2], &ok)
		return ok, m.str(3)
	}
	t.Run("AUTH is validated", func(t *testing.T) {
		if ok, reason := auth(sk, relayURL, "not the challenge"); ok || !strings.HasPrefix(reason, "invalid:") {
			t.Fatalf("wrong challenge: %v %q", ok, reason)
		}
		if ok, reason := auth(sk, "wss://elsewhere.example", challenge); ok || !strings.HasPrefix(reason, "invalid:") {
			t.Fatalf("wrong relay: %v %q", ok, reason)
		}
		if ok, reason := auth(sk, relayURL+"/", challenge); !ok {
			t.Fatalf("valid AUTH refused: %q", reason)
		}
	})
	t.Run("protected events from the authenticated author only", func(t *testing.T) {
		w.mustPublish(protected)
		other, _ := newKey()
		if ok, reason := w.publish(sign(t, other, 1, "not mine", nostr.Tag{"-"})); ok || !strings.HasPrefix(reason, "restricted:") {
			t.Fatalf("someone else's protected event: %v %q", ok, reason)
		}
		repost := sign(t, other, 6, protected.String(), nostr.Tag{"e", protected.ID}, nostr.Tag{"p", pk})
		if ok, reason := w.publish(repost); ok || !strings.HasPrefix(reason, "blocked:") {
			t.Fatalf("a repost of a protected event: %v %q", ok, reason)
		}
	})
	t.Run("with go-nostr's client", func(t *testing.T) {
		c, _ := relaytest.Dial(t, e.url)
		sk, _ := newKey()
		ev := sign(t, sk, 1, "protected, via go-nostr", nostr.Tag{"-"})
		if err := relaytest.Publish(t, c, ev); err == nil || !strings.Contains(err.Error(), "auth-required:") {
			t.Fatalf("unauthenticated: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := c.Auth(ctx, func(a *nostr.Event) error {
			a.Tags = nostr.Tags{{"relay", relayURL}, {"challenge", a.Tags.Find("challenge")[1]}}
			return a.Sign(sk)
		})
		if err != nil {
			t.Fatalf("AUTH: %v", err)
		}
		if err := relaytest.Publish(t, c, ev); err != nil {
			t.Fatalf("after AUTH: %v", err)
		}
	})
}

// NIP-09: deletions are exact, only the author's own, and final.
func TestNIP09(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, pk := newKey()
	has := func(id string) bool { return len(w.req("h", object{"ids": []string{id}})) == 1 }
	note := sign(t, sk, 1, "regret")
	w.mustPublish(note)
	del := sign(t, sk, 5, "", nostr.Tag{"e", note.ID})
	w.mustPublish(del)
	if has(note.ID) {
		t.Fatal("a deleted note is still served")
	}
	if ok, reason := w.publish(note); ok || !strings.HasPrefix(reason, "blocked:") {
		t.Fatalf("republishing a deleted note: %v %q", ok, reason)
	}

	t.Run("a deletion request cannot be deleted", func(t *testing.T) {
		w.mustPublish(sign(t, sk, 5, "", nostr.Tag{"e", del.ID}))
		if !has(del.ID) {
			t.Fatal("a kind 5 deleted another kind 5")
		}
		if ok, _ := w.publish(note); ok {
			t.Fatal("the note came back after its deletion request was 'deleted'")
		}
	})
	t.Run("only the author's own events", func(t *testing.T) {
		other, otherPK := newKey()
		theirs := sign(t, other, 1, "theirs")
		theirList := sign(t, other, 30000, "", nostr.Tag{"d", "x"})
		w.mustPublish(theirs, theirList)
		w.mustPublish(sign(t, sk, 5, "", nostr.Tag{"e", theirs.ID}, nostr.Tag{"a", "30000:" + otherPK + ":x"}))
		if !has(theirs.ID) || !has(theirList.ID) {
			t.Fatal("a stranger's deletion request deleted")
		}
	})
	t.Run("by address, exactly, up to the request's time", func(t *testing.T) {
		now := nostr.Now()
		x := signAt(t, sk, now-100, 30000, "", nostr.Tag{"d", "x"})
		xy := signAt(t, sk, now-100, 30000, "", nostr.Tag{"d", "xy"})
		noD := signAt(t, sk, now-100, 30000, "") // the address d=""
		z := signAt(t, sk, now-100, 30000, "", nostr.Tag{"d", "z"})
		relays := signAt(t, sk, now-100, 10002, "", nostr.Tag{"r", "wss://a.example"})
		w.mustPublish(x, xy, noD, z, relays)
		w.mustPublish(signAt(t, sk, now-50, 5, "", nostr.Tag{"a", "30000:" + pk + ":x"}, nostr.Tag{"a", "30000:" + pk + ":"}),
			signAt(t, sk, now-50, 5, "", nostr.Tag{"a", "10002:" + pk + ":"}))
		for _, ev := range []nostr.Event{x, noD, relays} {
			if has(ev.ID) {
				t.Errorf("%d %v was not deleted", ev.Kind, ev.Tags)
			}
		}
		for _, ev := range []nostr.Event{xy, z} {
			if !has(ev.ID) {
				t.Errorf("%d %v was deleted with another address", ev.Kind, ev.Tags)
			}
		}
		if ok, _ := w.publish(signAt(t, sk, now-60, 30000, "older again", nostr.Tag{"d", "x"})); ok {
			t.Fatal("a version older than the deletion was accepted")
		}
		w.mustPublish(signAt(t, sk, now-10, 30000, "newer", nostr.Tag{"d", "x"}))
	})
}

// NIP-40: expired events are neither returned nor counted, and a limit
// counts live events only.
func TestNIP40Limit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, pk := newKey()
	now := nostr.Now()
	soon := strconv.FormatInt(int64(now)+2, 10)
	var live []string
	for i := range 2 {
		ev := signAt(t, sk, now-10+nostr.Timestamp(i), 1, "stays")
		w.mustPublish(ev)
		live = append([]string{ev.ID}, live...)
	}
	for i := range 3 {
		w.mustPublish(signAt(t, sk, now-5+nostr.Timestamp(i), 1, "goes", nostr.Tag{"expiration", soon}))
	}
	mine := object{"authors": []string{pk}}
	if n := w.count("c", mine); n != 5 {
		t.Fatalf("before expiry: %d", n)
	}
	testkit.Past(time.Unix(int64(now)+2, 0).Add(100 * time.Millisecond))
	if n := w.count("c", mine); n != 2 {
		t.Fatalf("after expiry counted %d, want 2", n)
	}
	if got := w.req("l", withLimit(mine, 2)); !slices.Equal(got, live) {
		t.Fatalf("limit 2 after the 3 newer expired: %v, want the 2 live %v", got, live)
	}
}

// twoNotes serves a relay to which a client published two notes, a and b,
// signed with sk.
func twoNotes(t *testing.T, sk string) (e *env, w *wire, a, b nostr.Event) {
	e = newEnv(t)
	w = dialWire(t, e.url, 0)
	a, b = sign(t, sk, 1, "a"), sign(t, sk, 1, "b")
	w.mustPublish(a, b)
	return e, w, a, b
}

// Banned keys and banned events are not served (REQ, COUNT, broadcast) and
// not deleted: they come back when the ban lifts.
func TestBansHideEvents(t *testing.T) {
	t.Parallel()
	sk, pk := newKey()
	e, w, a, _ := twoNotes(t, sk)
	mine := object{"authors": []string{pk}}
	if _, err := e.svc.Ban(context.Background(), "test", pk, "spam", nil); err != nil {
		t.Fatal(err)
	}
	if got := w.req("r", mine); len(got) != 0 {
		t.Fatalf("a banned key's events served: %v", got)
	}
	if n := w.count("c", mine); n != 0 {
		t.Fatalf("a banned key's events counted: %d", n)
	}
	live := dialWire(t, e.url, 0)
	live.req("l", mine)
	ev := sign(t, sk, 1, "through the service path")
	if err := e.rl.Publish(context.Background(), &ev); err != nil {
		t.Fatal(err)
	}
	live.quiet(300 * time.Millisecond)
	if _, err := e.svc.Unban(context.Background(), "test", pk); err != nil {
		t.Fatal(err)
	}
	if n := w.count("c", mine); n != 3 {
		t.Fatalf("after the ban lifted: %d events, want 3", n)
	}
	// Events banned in the snapshot are hidden the same way (NIP-86
	// banevent: see TestNIP86BanEventHides).
	e.list.BanEvent(a.ID)
	if got := w.req("r", mine); slices.Contains(got, a.ID) || len(got) != 2 {
		t.Fatalf("a banned event served: %v", got)
	}
	e.list.AllowEvent(a.ID)
	if got := w.req("r", mine); !slices.Contains(got, a.ID) {
		t.Fatal("an allowed event is not served again")
	}
}

func TestEphemeral(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sub := dialWire(t, e.url, 0)
	pub := dialWire(t, e.url, 0)
	sk, _ := newKey()
	sub.req("e", object{"kinds": []int{20001}})
	ev := sign(t, sk, 20001, "now or never")
	pub.mustPublish(ev)
	if m := sub.expect("EVENT"); !strings.Contains(string(m.parts[2]), ev.ID) {
		t.Fatal(m)
	}
	if got := pub.req("q", object{"ids": []string{ev.ID}}); len(got) != 0 {
		t.Fatal("an ephemeral event was stored")
	}
}

// NIP-77 over raw frames, the client side being go-nostr's negentropy
// implementation; go-nostr's NegentropySync itself races with itself under
// -race, so nip77_norace_test.go runs it without.
func TestNIP77(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	_, pk := newKey()
	ctx := context.Background()
	base := nostr.Now() - 5000
	local := vector.New()
	var relayOnly, localOnly []string
	for i := range 1200 {
		ev := unsigned(pk, base+nostr.Timestamp(i), 1, fmt.Sprint(i))
		if i%40 != 0 { // most events both sides have
			local.Insert(ev.CreatedAt, ev.ID)
		} else {
			relayOnly = append(relayOnly, ev.ID)
		}
		if err := e.rl.Publish(ctx, &ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		ev := unsigned(pk, base+nostr.Timestamp(i), 1, fmt.Sprint("local ", i))
		local.Insert(ev.CreatedAt, ev.ID)
		localOnly = append(localOnly, ev.ID)
	}
	local.Seal()
	neg := negentropy.New(local, 4096) // small frames: several rounds
	var haves, haveNots []string
	var drained sync.WaitGroup
	drained.Go(func() {
		for id := range neg.Haves {
			haves = append(haves, id)
		}
	})
	drained.Go(func() {
		for id := range neg.HaveNots {
			haveNots = append(haveNots, id)
		}
	})
	w.send("NEG-OPEN", "sync", object{"authors": []string{pk}}, neg.Start())
	rounds := 0
	for {
		m := w.expect("NEG-MSG")
		rounds++
		next, err := neg.Reconcile(m.str(2))
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		if next == "" {
			break
		}
		w.send("NEG-MSG", "sync", next)
	}
	w.send("NEG-CLOSE", "sync")
	drained.Wait()
	slices.Sort(haves)
	slices.Sort(haveNots)
	slices.Sort(localOnly)
	slices.Sort(relayOnly)
	if !slices.Equal(haves, localOnly) || !slices.Equal(haveNots, relayOnly) {
		t.Fatalf("after %d rounds: %d ids only here (want %d), %d only on the relay (want %d)", rounds, len(haves), len(localOnly), len(haveNots), len(relayOnly))
	}
	if rounds < 2 {
		t.Fatalf("%d round; the frame limit should have taken several", rounds)
	}

	w.send("NEG-OPEN", "n", object{}, "zz")
	if m := w.expect("NEG-ERR"); m.str(1) != "n" || !strings.HasPrefix(m.str(2), "invalid:") {
		t.Fatal(m)
	}
	w.send("NEG-MSG", "unknown", "61")
	if m := w.expect("NEG-ERR"); !strings.HasPrefix(m.str(2), "closed:") {
		t.Fatal(m)
	}
}

// A client that stops answering (no pong, nothing sent) is dropped; one that
// answers pings stays.
func TestPingPong(t *testing.T) {
	t.Parallel()
	// 400 ms: a client is dropped after 1 s without a pong, which a loaded
	// CI machine running -race can still answer in time.
	e := newEnv(t, func(c *relay.Config) { c.PingInterval = 400 * time.Millisecond })
	alive := dialWire(t, e.url, 0)
	pings := make(chan struct{}, 100)
	alive.c.SetPingHandler(func(data string) error {
		pings <- struct{}{}
		return alive.c.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	alive.quiet(0) // starts its reader, which runs the ping handler
	silent := dialWire(t, e.url, 0)
	silent.c.SetPingHandler(func(string) error { return nil })
	_, err := silent.read(5 * time.Second)
	if err == nil || err == errTimeout {
		t.Fatalf("a silent client: %v, want the relay to hang up", err)
	}
	waitClients(t, e.rl, 1)
	for got := 0; got < 5; got++ { // five more pings, the client still there
		select {
		case <-pings:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d pings, want one every 400 ms", got)
		}
	}
	waitClients(t, e.rl, 1)
}

// waitClients waits until the relay has n clients.
func waitClients(t *testing.T, rl *relay.Relay, n int) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("%d clients", n), func() bool { return rl.Clients() == n })
}

func TestConnectionsPerIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withLimits(func(l *relay.Limits) { l.ConnectionsPerIP = 2 }))
	a := dialWire(t, e.url, 0)
	dialWire(t, e.url, 0)
	// A handshake completes before the relay lists its client: wait for
	// both, or "one client" below could be the second before it is listed.
	waitClients(t, e.rl, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.DefaultDialer.DialContext(ctx, wsURL(e.url), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third connection: %v %v, want 429", err, resp)
	}
	var body map[string]string
	json.NewDecoder(resp.Body).Decode(&body)
	if body["error"] != "rate_limit_exceeded" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("429 body %v, Retry-After %q", body, resp.Header.Get("Retry-After"))
	}
	a.c.Close()
	waitClients(t, e.rl, 1)
	dialWire(t, e.url, 0)
}

func TestEventRateLimits(t *testing.T) {
	t.Run("per key", func(t *testing.T) {
		e := newEnv(t, withLimits(func(l *relay.Limits) { l.EventsPerMinute = 3 }))
		w := dialWire(t, e.url, 0)
		sk, _ := newKey()
		for i := range 3 {
			w.mustPublish(sign(t, sk, 1, fmt.Sprint(i)))
		}
		if ok, reason := w.publish(sign(t, sk, 1, "fourth")); ok || !strings.HasPrefix(reason, "rate-limited:") {
			t.Fatalf("4th event in a minute: %v %q", ok, reason)
		}
		other, _ := newKey()
		w.mustPublish(sign(t, other, 1, "another key is not limited by the first"))
	})
	t.Run("per address, pipelined, with the default limits", func(t *testing.T) {
		e := newEnv(t)
		w := dialWire(t, e.url, 0)
		const n = 1100
		events := make([]nostr.Event, n)
		for i := range events {
			sk, _ := newKey()
			events[i] = sign(t, sk, 1, fmt.Sprint("pipelined ", i))
		}
		start := time.Now()
		go func() {
			for _, ev := range events {
				w.send("EVENT", ev)
			}
		}()
		accepted, limited := 0, 0
		for range n {
			m := w.expect("OK")
			switch {
			case string(m.parts[2]) == "true":
				accepted++
			case strings.HasPrefix(m.str(3), "rate-limited:"):
				limited++
			default:
				t.Fatalf("unexpected %s", m)
			}
		}
		per := relay.DefaultLimits().IPEventsPerMinute
		most := per + int(time.Since(start).Seconds()*float64(per)/60) + 1
		if accepted < per || accepted > most {
			t.Fatalf("%d of %d pipelined events accepted, want %d to %d", accepted, n, per, most)
		}
	})
}

// Stored events wait for room in the outbox: a client reading slowly gets
// them all, more than its outbox and socket buffers hold, and is not dropped.
func TestStoredEventsWaitForRoom(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *relay.Config) {
		c.OutboxBytes = 64 << 10
		l := relay.DefaultLimits()
		l.EventsPerMinute, l.IPEventsPerMinute = 0, 0
		c.Limits = &l
	})
	w := dialWire(t, e.url, 0)
	sk, pk := newKey()
	const n = 150 // 1.2 MB
	for i := range n {
		w.mustPublish(sign(t, sk, 1, fmt.Sprint(i, strings.Repeat(" padding", 1000))))
	}
	slow := dialWire(t, e.url, 64<<10)
	slow.send("REQ", "slow", object{"authors": []string{pk}, "limit": n})
	got := 0
	for {
		time.Sleep(2 * time.Millisecond) // the slow reader under test
		m := slow.next()
		if m.label == "EOSE" {
			break
		}
		got++
	}
	if got != n {
		t.Fatalf("a slow reader got %d of %d stored events", got, n)
	}
}

// The service's own events (REST reports) reach subscribers without ever
// waiting for one.
func TestPublishNeverWaits(t *testing.T) {
	e := newEnv(t, func(c *relay.Config) { c.OutboxBytes = 64 << 10 })
	stalled := dialWire(t, e.url, 4096)
	stalled.req("all", object{})
	_, pk := newKey()
	start := time.Now()
	for i := range 2000 {
		ev := unsigned(pk, nostr.Now(), 1, fmt.Sprint(i, strings.Repeat(" report", 100)))
		if err := e.rl.Publish(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("2000 Publish calls with a stalled subscriber took %v", d)
	}
	waitClients(t, e.rl, 0) // the stalled subscriber was dropped
}
