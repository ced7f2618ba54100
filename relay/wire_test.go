package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// wire is a websocket client that speaks raw frames, for what a Nostr
// client library hides: exact messages, their order and their count.
type wire struct {
	t      *testing.T
	c      *websocket.Conn
	start  sync.Once
	frames chan []byte
	err    error // why frames was closed
}

// dialWire connects to the relay at url (http:// or ws://). rcvBuf > 0 sets
// the socket's receive buffer (a small one makes a stalled reader stall soon).
func dialWire(t *testing.T, url string, rcvBuf int) *wire {
	t.Helper()
	return dialWireWith(t, url, rcvBuf, nil)
}

// dialWireWith dials with extra handshake headers.
func dialWireWith(t *testing.T, url string, rcvBuf int, h http.Header) *wire {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	if rcvBuf > 0 {
		d.NetDialContext = relaytest.SmallReceiveBuffer(rcvBuf)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := d.DialContext(ctx, wsURL(url), h)
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", url, err, resp)
	}
	t.Cleanup(func() { c.Close() })
	return &wire{t: t, c: c}
}

func wsURL(u string) string { return "ws" + strings.TrimPrefix(u, "http") }

// send writes one message made of parts.
func (w *wire) send(parts ...any) {
	w.t.Helper()
	b, err := json.Marshal(parts)
	if err != nil {
		w.t.Fatal(err)
	}
	w.sendRaw(string(b))
}

func (w *wire) sendRaw(msg string) {
	w.t.Helper()
	w.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := w.c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// msg is a relay message: its label and its raw elements.
type msg struct {
	label string
	parts []json.RawMessage
}

func (m msg) str(i int) string {
	var s string
	if i < len(m.parts) {
		json.Unmarshal(m.parts[i], &s)
	}
	return s
}

func (m msg) String() string {
	b, _ := json.Marshal(m.parts)
	return string(b)
}

// next reads the next message, failing the test after 10 s.
func (w *wire) next() msg {
	w.t.Helper()
	m, err := w.read(10 * time.Second)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return m
}

// read waits up to timeout for the next message. A goroutine reads, so a
// timeout leaves the connection usable.
func (w *wire) read(timeout time.Duration) (msg, error) {
	w.start.Do(func() {
		w.frames = make(chan []byte, 1<<16)
		go func() {
			defer close(w.frames)
			for {
				_, b, err := w.c.ReadMessage()
				if err != nil {
					w.err = err
					return
				}
				w.frames <- b
			}
		}()
	})
	var b []byte
	select {
	case f, ok := <-w.frames:
		if !ok {
			return msg{}, w.err
		}
		b = f
	case <-time.After(timeout):
		return msg{}, errTimeout
	}
	var m msg
	if err := json.Unmarshal(b, &m.parts); err != nil || len(m.parts) == 0 {
		w.t.Fatalf("not a relay message: %s", b)
	}
	json.Unmarshal(m.parts[0], &m.label)
	return m, nil
}

var errTimeout = errors.New("timed out")

// quiet asserts nothing arrives for d.
func (w *wire) quiet(d time.Duration) {
	w.t.Helper()
	if m, err := w.read(d); err == nil {
		w.t.Fatalf("unexpected message %s", m)
	}
}

// expect reads the next message and checks its label.
func (w *wire) expect(label string) msg {
	w.t.Helper()
	m := w.next()
	if m.label != label {
		w.t.Fatalf("got %s, want a %s message", m, label)
	}
	return m
}

// publish sends ev and returns the relay's OK.
func (w *wire) publish(ev nostr.Event) (bool, string) {
	w.t.Helper()
	w.send("EVENT", ev)
	for {
		m := w.next()
		if m.label == "OK" && m.str(1) == ev.ID {
			var ok bool
			json.Unmarshal(m.parts[2], &ok)
			return ok, m.str(3)
		}
		if m.label != "AUTH" {
			w.t.Fatalf("waiting for OK of %s, got %s", ev.ID, m)
		}
	}
}

// mustPublish publishes ev and fails unless the relay accepted it.
func (w *wire) mustPublish(evs ...nostr.Event) {
	w.t.Helper()
	for _, ev := range evs {
		if ok, reason := w.publish(ev); !ok {
			w.t.Fatalf("publish %s: refused: %s", ev.Content, reason)
		}
	}
}

// req subscribes and returns the ids of the stored events sent before EOSE,
// in order (duplicates kept, so tests can see them).
func (w *wire) req(subID string, filters ...any) []string {
	w.t.Helper()
	w.send(append([]any{"REQ", subID}, filters...)...)
	var ids []string
	for {
		m := w.next()
		switch {
		case m.label == "EVENT" && m.str(1) == subID:
			var ev nostr.Event
			if err := json.Unmarshal(m.parts[2], &ev); err != nil {
				w.t.Fatalf("bad event in %s", m)
			}
			ids = append(ids, ev.ID)
		case m.label == "EOSE" && m.str(1) == subID:
			return ids
		default:
			w.t.Fatalf("waiting for EOSE of %s, got %s", subID, m)
		}
	}
}

// refused expects a CLOSED for subID with the given reason prefix.
func (w *wire) refused(subID, prefix string) string {
	w.t.Helper()
	m := w.expect("CLOSED")
	if m.str(1) != subID || !strings.HasPrefix(m.str(2), prefix) {
		w.t.Fatalf("got %s, want CLOSED %q with a %q reason", m, subID, prefix)
	}
	return m.str(2)
}

// count sends a COUNT with filters and returns the count.
func (w *wire) count(subID string, filters ...any) int64 {
	w.t.Helper()
	w.send(append([]any{"COUNT", subID}, filters...)...)
	m := w.expect("COUNT")
	var body struct {
		Count *int64 `json:"count"`
	}
	if m.str(1) != subID || json.Unmarshal(m.parts[2], &body) != nil || body.Count == nil {
		w.t.Fatalf("bad COUNT answer %s", m)
	}
	return *body.Count
}
