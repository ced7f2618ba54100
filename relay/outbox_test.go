package relay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"

	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fasthttp/websocket"
)

func text(s string) frame { return textFrame([]byte(s)) }

func bodies(fs []frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.head)+string(f.body)+string(f.tail))
	}
	return out
}

func TestOutboxBounds(t *testing.T) {
	t.Parallel()
	o := newOutbox(10)
	if !o.push(text("12345")) || !o.push(text("67890")) {
		t.Fatal("frames within the limit were refused")
	}
	if o.push(text("x")) {
		t.Fatal("a broadcast over the limit was queued")
	}
	sent := make(chan bool)
	go func() { sent <- o.send(text("answer")) }()
	select {
	case <-sent:
		t.Fatal("an answer was queued into a full outbox instead of waiting")
	case <-time.After(50 * time.Millisecond):
	}
	frames, last := o.take(nil, 1<<20)
	if last || strings.Join(bodies(frames), ",") != "12345,67890" {
		t.Fatalf("take = %v %v", bodies(frames), last)
	}
	o.written(10)
	if !<-sent {
		t.Fatal("the waiting answer was not queued once there was room")
	}
}

// A REQ's stored events go in batches: a batch waits, as an answer does,
// while the outbox is more than half full, then goes in whole and in order.
func TestOutboxSendAll(t *testing.T) {
	t.Parallel()
	o := newOutbox(20)
	o.push(text("123456789"))
	o.push(text("abc"))
	sent := make(chan bool)
	go func() { sent <- o.sendAll([]frame{text("x"), text("y")}) }()
	select {
	case <-sent:
		t.Fatal("a batch was queued into a more than half full outbox instead of waiting")
	case <-time.After(50 * time.Millisecond):
	}
	frames, _ := o.take(nil, 1<<20)
	o.written(12)
	if !<-sent {
		t.Fatal("the waiting batch was not queued once there was room")
	}
	frames, _ = o.take(frames[:0], 1<<20)
	if got := strings.Join(bodies(frames), ","); got != "x,y" {
		t.Fatalf("got %q, want the batch in order", got)
	}
	o.close()
	if o.sendAll([]frame{text("z")}) {
		t.Fatal("a batch was queued into a closed outbox")
	}
}

func TestOutboxOrder(t *testing.T) {
	t.Parallel()
	o := newOutbox(1 << 20)
	o.push(text("a"))
	o.push(text("b"))
	o.control(frame{op: opPong, body: []byte("p")})
	frames, _ := o.take(nil, 1)
	if got := bodies(frames); strings.Join(got, ",") != "p,a" {
		t.Fatalf("got %v, want the pong first, then data up to the batch size", got)
	}
	o.written(1)
	o.push(text("c"))
	o.shut(closePayload(1001, "bye"))
	if o.push(text("d")) || o.send(text("e")) {
		t.Fatal("frames queued after the close frame")
	}
	frames, last := o.take(nil, 1<<20)
	if !last || len(frames) != 1 || frames[0].op != opClose {
		t.Fatalf("after shut: %v %v, want only the close frame, last (unsent data is dropped)", bodies(frames), last)
	}
	o.written(0)
	if o.queued != 0 {
		t.Fatalf("%d bytes still counted as queued", o.queued)
	}
}

// Frames written in one batch arrive as separate, valid websocket messages
// to fasthttp/websocket's client.
func TestWriteFrames(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	frames := []frame{
		{op: opText, head: []byte(`["EVENT","s",`), body: []byte(`{"id":"x"}`), tail: closingBracket},
		text(strings.Repeat("m", 300)),
		{op: opPing, body: []byte("p")},
		text(strings.Repeat("l", 70000)),
	}
	go func() {
		req, err := http.ReadRequest(bufio.NewReader(server))
		if err != nil {
			return
		}
		h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		fmt.Fprintf(server, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			base64.StdEncoding.EncodeToString(h[:]))
		writeFrames(server, frames, 5*time.Second)
		io.Copy(io.Discard, server) // the client's pong
	}()
	d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) { return client, nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := d.DialContext(ctx, "ws://relay.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	pinged := false
	ws.SetPingHandler(func(string) error { pinged = true; return nil })
	for _, want := range []string{`["EVENT","s",{"id":"x"}]`, strings.Repeat("m", 300), strings.Repeat("l", 70000)} {
		_, got, err := ws.ReadMessage()
		if err != nil || string(got) != want {
			t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
		}
	}
	if !pinged {
		t.Fatal("the ping between the messages was not seen")
	}
}

func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "new\nline\ttab\r", "\x00\x1f control", "ünïcödé 🎉", "bad \xff utf8", "<html>&"} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, got, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if back != want {
			t.Fatalf("%q round-tripped as %q", s, back)
		}
		if !utf8.Valid(got) || bytes.ContainsAny(got, "\n\r\t") {
			t.Fatalf("%q encoded as %q", s, got)
		}
	}
}

func TestClosePayload(t *testing.T) {
	t.Parallel()
	p := closePayload(1001, strings.Repeat("é", 100))
	if len(p) > 125 || !utf8.Valid(p[2:]) || p[0] != 0x03 || p[1] != 0xE9 {
		t.Fatalf("close payload %d bytes % x", len(p), p[:2])
	}
}
