package nostrclient_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/guard/netguard"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
)

// startKhatru serves a bare khatru relay on 127.0.0.1 that refuses kind 1
// events and, asking for NIP-42 auth, REQs for kind 4.
func startKhatru(t *testing.T) string {
	t.Helper()
	db := &slicestore.SliceStore{}
	db.Init()
	k := khatru.NewRelay()
	k.StoreEvent = append(k.StoreEvent, db.SaveEvent)
	k.QueryEvents = append(k.QueryEvents, db.QueryEvents)
	k.RejectEvent = append(k.RejectEvent, func(_ context.Context, ev *nostr.Event) (bool, string) {
		return ev.Kind == 1, "blocked: no notes here"
	})
	k.RejectFilter = append(k.RejectFilter, func(_ context.Context, f nostr.Filter) (bool, string) {
		return len(f.Kinds) == 1 && f.Kinds[0] == 4, "auth-required: direct messages"
	})
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sign(t *testing.T, kind int, content string) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Content: content, Tags: nostr.Tags{}}
	if err := ev.Sign(nostr.GeneratePrivateKey()); err != nil {
		t.Fatal(err)
	}
	return ev
}

// next returns the next message, failing the test when there is none; its
// Size, checked to be there, is left out so that messages compare by what
// they say.
func next(t *testing.T, ctx context.Context, c *nostrclient.Conn) nostrclient.Message {
	t.Helper()
	m, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Size <= 0 {
		t.Fatalf("%+v: no size", m)
	}
	m.Size = 0
	return m
}

// TestKhatru: every message a relay answers with arrives typed.
func TestKhatru(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	c, err := nostrclient.Dial(ctx, startKhatru(t), nostrclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	stored, refused := sign(t, 30000, "kept"), sign(t, 1, "refused")
	if err := c.Send(ctx, "EVENT", stored); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ctx, c); m != (nostrclient.Message{Label: "OK", Sub: stored.ID, OK: true}) {
		t.Fatalf("got %+v, want OK", m)
	}
	if ok, reason, err := c.Publish(ctx, &refused); err != nil || ok || reason != "blocked: no notes here" {
		t.Fatalf("a refused event: %v %q %v", ok, reason, err)
	}

	if err := c.Send(ctx, "REQ", "all", nostr.Filter{Kinds: []int{30000, 1}}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ctx, c); m.Label != "EVENT" || m.Sub != "all" || m.Event == nil || m.Event.ID != stored.ID {
		t.Fatalf("got %+v, want the stored event", m)
	}
	if m := next(t, ctx, c); m != (nostrclient.Message{Label: "EOSE", Sub: "all"}) {
		t.Fatalf("got %+v, want EOSE", m)
	}

	if err := c.Send(ctx, "REQ", "dms", nostr.Filter{Kinds: []int{4}}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ctx, c); m.Label != "AUTH" || m.Text == "" {
		t.Fatalf("got %+v, want an AUTH challenge", m)
	}
	if m := next(t, ctx, c); m != (nostrclient.Message{Label: "CLOSED", Sub: "dms", Text: "auth-required: direct messages"}) {
		t.Fatalf("got %+v, want CLOSED", m)
	}
}

// TestReadLimit: a message over the limit ends the connection; those
// before it arrive.
func TestReadLimit(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := startKhatru(t)
	c, err := nostrclient.Dial(ctx, url, nostrclient.Options{ReadLimit: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	small, big := sign(t, 30000, "small"), sign(t, 30001, strings.Repeat("x", 8192))
	for _, ev := range []nostr.Event{small, big} {
		if ok, reason, err := c.Publish(ctx, &ev); !ok || err != nil {
			t.Fatalf("publish: %q %v", reason, err)
		}
	}
	c.Send(ctx, "REQ", "small", nostr.Filter{IDs: []string{small.ID}})
	if m := next(t, ctx, c); m.Event == nil || m.Event.ID != small.ID {
		t.Fatalf("got %+v, want the small event", m)
	}
	next(t, ctx, c) // its EOSE
	c.Send(ctx, "REQ", "big", nostr.Filter{IDs: []string{big.ID}})
	if _, err := c.Next(ctx); !errors.Is(err, websocket.ErrReadLimit) {
		t.Fatalf("the big event: %v, want the read limit", err)
	}
}

// TestGarbage: what is not a relay message arrives without a Label but
// with its Size, for budgets to count; the connection goes on.
func TestGarbage(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var up websocket.Upgrader
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for _, msg := range []string{`not json at all`, `["EOSE"]`, `["NOTICE","still here"]`} {
			ws.WriteMessage(websocket.TextMessage, []byte(msg))
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, err := nostrclient.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nostrclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, want := range []nostrclient.Message{{Size: 15}, {Size: 8}, {Label: "NOTICE", Text: "still here", Size: 23}} {
		if m, err := c.Next(ctx); err != nil || m != want {
			t.Fatalf("got %+v %v, want %+v", m, err, want)
		}
	}
}

// A relay that answers pings stays connected through many of them; one that
// stops reading (and so answering) is hung up on.
func TestKeepalive(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	// (a PongWait generous enough for a loaded machine: 14 pings go
	// unanswered before it runs out; the sleep spans two of them)
	opt := nostrclient.Options{PingEvery: 50 * time.Millisecond, PongWait: 700 * time.Millisecond}
	c, err := nostrclient.Dial(ctx, startKhatru(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(2 * (opt.PingEvery + opt.PongWait)) // staying connected is over time: past two read deadlines the pongs moved
	if err := c.Send(ctx, "REQ", "x", nostr.Filter{}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, ctx, c); m.Label != "EOSE" {
		t.Fatalf("got %+v", m)
	}

	deaf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var up websocket.Upgrader
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		<-r.Context().Done() // never reads, so never answers a ping
	}))
	defer deaf.Close()
	c, err = nostrclient.Dial(ctx, "ws"+strings.TrimPrefix(deaf.URL, "http"), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ne net.Error
	if _, err := c.Next(ctx); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a relay that does not answer pings: %v, want a read timeout", err)
	}
}

// Whoever supplies a guarded dialer gets the guard: on the address dialled,
// and without following a redirect.
func TestGuardedDial(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := startKhatru(t)
	guarded := nostrclient.Options{NetDial: (&net.Dialer{Control: netguard.Control}).DialContext}
	if _, err := nostrclient.Dial(ctx, url, guarded); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("a relay on 127.0.0.1 through the guard: %v, want ErrBlocked", err)
	}
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer redirect.Close()
	if _, err := nostrclient.Dial(ctx, "ws"+strings.TrimPrefix(redirect.URL, "http"), nostrclient.Options{}); err == nil || followed.Load() {
		t.Fatalf("a redirect: %v, followed %v", err, followed.Load())
	}
}

// TestContextEndsConnection: the connection lives as long as Dial's ctx.
func TestContextEndsConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(testContext(t))
	c, err := nostrclient.Dial(ctx, startKhatru(t), nostrclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	for range c.Messages() {
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err %v, want context.Canceled", c.Err())
	}
}
