package relay_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// rawQuery sends a REQ over a plain websocket and returns the ids of the
// events the relay sends before EOSE. go-nostr's client would drop events
// that don't match the filter, hiding what the relay really sent. The
// connection and the subscription stay open (see relaytest).
func rawQuery(t *testing.T, url string, f nostr.Filter) []string {
	t.Helper()
	p := relaytest.NewProxy(t, url[len("http://"):])
	t.Cleanup(p.Freeze)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+p.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal([]any{"REQ", "raw", f})
	if err := conn.WriteMessage(websocket.TextMessage, req); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var ids []string
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for EOSE: %v", err)
		}
		var frame []json.RawMessage
		if err := json.Unmarshal(msg, &frame); err != nil || len(frame) < 2 {
			t.Fatalf("bad frame %s", msg)
		}
		var label string
		json.Unmarshal(frame[0], &label)
		switch label {
		case "EOSE":
			return ids
		case "EVENT":
			var ev nostr.Event
			if len(frame) != 3 || json.Unmarshal(frame[2], &ev) != nil {
				t.Fatalf("bad EVENT frame %s", msg)
			}
			ids = append(ids, ev.ID)
		default:
			t.Fatalf("unexpected frame %s", msg)
		}
	}
}

// The cases of issue 9 §1 through the real relay: events published with a
// go-nostr client, REQs sent as raw frames. REQ returns only events matching
// the whole filter, and publishing a replaceable or addressable event
// replaces only its exact address.
func TestRelayStoresAndServesExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, _ := relaytest.Dial(t, e.srv.URL)
	sk := nostr.GeneratePrivateKey()
	at := nostr.Now() - 1000
	publish := func(kind int, tags ...nostr.Tag) nostr.Event {
		t.Helper()
		at++
		ev := nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: "x"}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		if err := relaytest.Publish(t, c, ev); err != nil {
			t.Fatalf("publish kind %d %v: %v", kind, tags, err)
		}
		return ev
	}
	want := func(f nostr.Filter, evs ...nostr.Event) {
		t.Helper()
		got := rawQuery(t, e.srv.URL, f)
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.ID)
		}
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Errorf("REQ %v: got %d events %v, want %d %v", f, len(got), got, len(ids), ids)
		}
	}

	t.Run("tag values match exactly", func(t *testing.T) {
		abc := publish(1, nostr.Tag{"t", "abc"})
		abcdef := publish(1, nostr.Tag{"t", "abcdef"})
		want(nostr.Filter{Tags: nostr.TagMap{"t": {"abc"}}}, abc)
		want(nostr.Filter{Tags: nostr.TagMap{"t": {"abcdef"}}}, abcdef)
	})
	t.Run("d tag addresses", func(t *testing.T) {
		xy := publish(30000, nostr.Tag{"d", "xy"})
		x := publish(30000, nostr.Tag{"d", "x"})
		friends := publish(30000, nostr.Tag{"d", "friends"})
		muted := publish(30000, nostr.Tag{"d", "muted"})
		noD := publish(30000)
		want(nostr.Filter{Kinds: []int{30000}, Authors: []string{x.PubKey}}, xy, x, friends, muted, noD)
		// d="" is the address of noD, and the only event #d:[""] matches.
		empty := publish(30000, nostr.Tag{"d", ""})
		want(nostr.Filter{Kinds: []int{30000}, Authors: []string{x.PubKey}}, xy, x, friends, muted, empty)
		want(nostr.Filter{Tags: nostr.TagMap{"d": {""}}}, empty)
		// An older version of an address is refused, not stored, and replaces nothing.
		older := nostr.Event{Kind: 30000, CreatedAt: at - 100, Tags: nostr.Tags{{"d", "friends"}}, Content: "x"}
		older.Sign(sk)
		if err := relaytest.Publish(t, c, older); err == nil || !strings.Contains(err.Error(), "replaced:") {
			t.Fatalf("an older version: %v, want replaced:", err)
		}
		want(nostr.Filter{Kinds: []int{30000}, Tags: nostr.TagMap{"d": {"friends"}}}, friends)
	})
	t.Run("NIP-87 reviews survive", func(t *testing.T) {
		k := nostr.Tag{"k", "38172"}
		mintPK := "a7b1f3c0d8e2456f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f"
		byPK := publish(38000, k, nostr.Tag{"d", mintPK}, nostr.Tag{"u", "https://mint.example.com"})
		byURL := publish(38000, k, nostr.Tag{"d", "https://mint.example.com/v2"}, nostr.Tag{"u", "https://mint.example.com/v2"})
		prefix := publish(38000, k, nostr.Tag{"d", "https://mint.example.com"}, nostr.Tag{"u", "https://mint.example.com"})
		noD := publish(38000, k, nostr.Tag{"u", "https://other.example"})
		want(nostr.Filter{Kinds: []int{38000}}, byPK, byURL, prefix, noD)
		want(nostr.Filter{Kinds: []int{38000}, Tags: nostr.TagMap{"u": {"https://mint.example.com"}}}, byPK, prefix)
	})
}
