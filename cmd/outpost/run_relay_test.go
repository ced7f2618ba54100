package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

var newKeyPair = relaytest.NewKey

// rawClient is a websocket client speaking raw Nostr frames.
type rawClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialRaw(t *testing.T, url string, header http.Header, rcvBuf int) (*rawClient, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	if rcvBuf > 0 {
		d.NetDialContext = relaytest.SmallReceiveBuffer(rcvBuf)
	}
	c, resp, err := d.Dial(url, header)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	return &rawClient{t: t, c: c}, nil
}

func (r *rawClient) send(parts ...any) error {
	b, _ := json.Marshal(parts)
	r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return r.c.WriteMessage(websocket.TextMessage, b)
}

// next reads one message as its elements.
func (r *rawClient) next(timeout time.Duration) ([]json.RawMessage, string, error) {
	r.c.SetReadDeadline(time.Now().Add(timeout))
	_, b, err := r.c.ReadMessage()
	if err != nil {
		return nil, "", err
	}
	var parts []json.RawMessage
	var label string
	if json.Unmarshal(b, &parts) == nil && len(parts) > 0 {
		json.Unmarshal(parts[0], &label)
	}
	return parts, label, nil
}

// The -race whole-program test: publishers, subscribers that come and go
// (REQ, replacing REQs, CLOSE, abrupt disconnects), REST reports and a
// subscriber that stays, all at once. The one that stays sees every event
// exactly once. (khatru's listener list, which raced here, is not used.)
func TestRelayUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_RELAY_EVENTS_PER_MINUTE": "0",
		"OUTPOST_RELAY_IP_EVENTS_PER_MINUTE": "0", "OUTPOST_RELAY_IP_CONNECTIONS": "0", "OUTPOST_REPORTS_RATE_LIMIT": "0"})
	const publishers, perPublisher, churners, reports = 4, 40, 6, 10
	watcher, err := dialRaw(t, inst.ws, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.c.Close()
	watcher.send("REQ", "watch", map[string]any{"kinds": []int{1, 1984}, "limit": 0})
	if _, label, err := watcher.next(10 * time.Second); err != nil || label != "EOSE" {
		t.Fatalf("watcher: %v %s", err, label)
	}
	seen := map[string]int{}
	var seenMu sync.Mutex
	want := publishers*perPublisher + reports
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for n := 0; n < want; {
			parts, label, err := watcher.next(60 * time.Second)
			if err != nil {
				return
			}
			if label == "EVENT" {
				var ev nostr.Event
				json.Unmarshal(parts[2], &ev)
				seenMu.Lock()
				seen[ev.ID]++
				seenMu.Unlock()
				n++
			}
		}
	}()

	var wg sync.WaitGroup
	published := make(chan string, publishers*perPublisher)
	for p := range publishers {
		wg.Go(func() {
			c, err := dialRaw(t, inst.ws, nil, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.c.Close()
			sk, _ := newKeyPair()
			for i := range perPublisher {
				ev := note(t, sk, fmt.Sprintf("publisher %d note %d", p, i), 1)
				c.send("EVENT", ev)
				for {
					parts, label, err := c.next(30 * time.Second)
					if err != nil {
						t.Error(err)
						return
					}
					if label == "OK" {
						if string(parts[2]) != "true" {
							t.Errorf("refused: %s", parts[3])
						}
						published <- ev.ID
						break
					}
				}
			}
		})
	}
	for ch := range churners {
		wg.Go(func() {
			for round := range 8 {
				c, err := dialRaw(t, inst.ws, nil, 0)
				if err != nil {
					t.Error(err)
					return
				}
				for s := range 3 {
					c.send("REQ", fmt.Sprint("s", s), map[string]any{"kinds": []int{1}, "limit": 5})
				}
				c.send("REQ", "s0", map[string]any{"kinds": []int{1984}}) // replaces s0
				c.send("CLOSE", "s1")
				c.send("COUNT", "c", map[string]any{"kinds": []int{1}}, map[string]any{"kinds": []int{1984}})
				for range 5 {
					if _, _, err := c.next(10 * time.Second); err != nil {
						break
					}
				}
				if (ch+round)%2 == 0 {
					c.c.Close() // abrupt: no close frame
				} else {
					c.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
					c.c.Close()
				}
			}
		})
	}
	_, reported := newKeyPair()
	for i := range reports {
		wg.Go(func() {
			code, body := call(t, "POST", inst.url+"/banlist/reports", map[string]any{"reported_pubkey": reported, "reason": "spam", "comment": fmt.Sprint("report ", i)})
			if code != 201 {
				t.Errorf("report: %d %v", code, body)
			}
		})
	}
	wg.Wait()
	close(published)
	select {
	case <-watched:
	case <-time.After(60 * time.Second):
		t.Fatal("the watcher did not see every event")
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	for id := range published {
		if seen[id] != 1 {
			t.Errorf("event %s seen %d times", id, seen[id])
		}
	}
	if len(seen) != want {
		t.Errorf("the watcher saw %d distinct events, want %d", len(seen), want)
	}
}

// A subscriber that stops reading does not hold up publishers or the REST
// reports that publish through the relay.
func TestStalledSubscriberHoldsUpNoOne(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_RELAY_EVENTS_PER_MINUTE": "0", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE": "0"})
	stalled, err := dialRaw(t, inst.ws, nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.c.Close()
	stalled.send("REQ", "everything", map[string]any{"limit": 0}) // and never read
	pub, err := dialRaw(t, inst.ws, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.c.Close()
	sk, _ := newKeyPair()
	for i := range 400 { // 1.2 MB: more than the stalled socket takes
		ev := note(t, sk, fmt.Sprint(i, strings.Repeat(" 3 KB", 600)), 1)
		pub.send("EVENT", ev)
		if _, label, err := pub.next(10 * time.Second); err != nil || label != "OK" {
			t.Fatalf("publish %d: %v %s", i, err, label)
		}
	}
	_, reported := newKeyPair()
	for i := range 5 {
		t0 := time.Now()
		code, body := call(t, "POST", inst.url+"/banlist/reports", map[string]any{"reported_pubkey": reported, "reason": "spam", "comment": fmt.Sprint(i)})
		if code != 201 {
			t.Fatalf("report: %d %v", code, body)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("POST /banlist/reports took %v with a stalled subscriber", d)
		}
	}
}

// Connections per client IP: the socket address, or X-Forwarded-For only
// from a trusted proxy.
func TestConnectionsPerClientIP(t *testing.T) {
	t.Parallel()
	xff := func(ip string) http.Header { return http.Header{"X-Forwarded-For": {ip}} }
	t.Run("untrusted X-Forwarded-For is ignored", func(t *testing.T) {
		inst := start(t, t.TempDir(), map[string]string{"OUTPOST_RELAY_IP_CONNECTIONS": "2"})
		for _, ip := range []string{"203.0.113.1", "203.0.113.2"} {
			c, err := dialRaw(t, inst.ws, xff(ip), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.c.Close()
		}
		if _, err := dialRaw(t, inst.ws, xff("203.0.113.3"), 0); err == nil || !strings.Contains(err.Error(), "429") {
			t.Fatalf("a third connection from 127.0.0.1: %v, want 429", err)
		}
	})
	t.Run("from a trusted proxy", func(t *testing.T) {
		inst := start(t, t.TempDir(), map[string]string{"OUTPOST_RELAY_IP_CONNECTIONS": "1", "OUTPOST_TRUSTED_PROXIES": "127.0.0.1/32"})
		for _, ip := range []string{"203.0.113.1", "203.0.113.2"} {
			c, err := dialRaw(t, inst.ws, xff(ip), 0)
			if err != nil {
				t.Fatalf("%s: %v", ip, err)
			}
			defer c.c.Close()
		}
		if _, err := dialRaw(t, inst.ws, xff("203.0.113.1"), 0); err == nil || !strings.Contains(err.Error(), "429") {
			t.Fatalf("a second connection for 203.0.113.1: %v, want 429", err)
		}
	})
}
