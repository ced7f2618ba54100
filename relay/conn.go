package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// conn is one websocket client. Its read loop parses messages and handles
// REQ, CLOSE and AUTH in order; EVENT, COUNT and NIP-77 messages run
// concurrently, at most maxInFlight at a time (then the loop stops reading,
// and TCP slows the client down). Everything written goes through out, to
// one writer goroutine.
type conn struct {
	r         *Relay
	ws        *websocket.Conn
	nc        net.Conn
	ip        string
	challenge string // NIP-42
	out       *outbox
	ctx       context.Context
	cancel    context.CancelFunc
	sem       chan struct{}
	written   chan struct{} // closed when the writer has stopped
	dropOnce  sync.Once
	ipChecked uint64 // the ban list's IPVersion when ip was last checked (read loop only)

	mu      sync.Mutex
	subs    map[string]*sub
	values  int      // named by the filters of subs (Limits.MaxFilterValues)
	pubkeys []string // authenticated (NIP-42)
	negs    map[string]*negSession
}

func newConn(r *Relay, ws *websocket.Conn, ip string) *conn {
	challenge := make([]byte, 16)
	rand.Read(challenge)
	c := &conn{r: r, ws: ws, nc: ws.NetConn(), ip: ip, challenge: hex.EncodeToString(challenge),
		out: newOutbox(r.outboxBytes), sem: make(chan struct{}, maxInFlight), written: make(chan struct{}),
		subs: map[string]*sub{}, negs: map[string]*negSession{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// serve runs the connection until the client leaves or is dropped.
func (c *conn) serve() {
	go c.writeLoop()
	defer c.end()
	ws := c.ws
	pongWait := c.r.pingInterval * 5 / 2
	alive := func() error { return ws.SetReadDeadline(time.Now().Add(pongWait)) }
	ws.SetReadLimit(c.r.limits.frameLimit())
	alive()
	ws.SetPongHandler(func(string) error { return alive() })
	ws.SetPingHandler(func(data string) error {
		c.out.control(frame{op: opPong, body: []byte(data)})
		return alive()
	})
	ws.SetCloseHandler(func(code int, _ string) error {
		if code == websocket.CloseNoStatusReceived {
			c.out.shut(nil)
		} else {
			c.out.shut(closePayload(code, ""))
		}
		return nil
	})
	for {
		typ, msg, err := ws.ReadMessage()
		if errors.Is(err, websocket.ErrReadLimit) {
			c.drain()
		}
		if err != nil {
			return
		}
		alive()
		if typ != websocket.TextMessage {
			c.send(noticeMessage("invalid: messages are JSON text"))
			continue
		}
		if !c.handle(msg) {
			return
		}
	}
}

// drainTime bounds how long drain waits for the client.
const drainTime = 2 * time.Second

// drain reads and discards what the client still sends after a frame over
// the read limit, until it closes or drainTime passes. The websocket
// library has sent the close frame (1009) on seeing the frame's header, but
// the frame's bytes keep coming: closing the socket with them unread resets
// the connection, and the client's kernel drops the close frame unread
// (the client sees 1006, from frames of about 2 MB on).
func (c *conn) drain() {
	c.nc.SetReadDeadline(time.Now().Add(drainTime))
	io.Copy(io.Discard, io.LimitReader(c.nc, 2*hardFrameNoLimit))
}

// handle dispatches one message; false ends the connection.
func (c *conn) handle(msg []byte) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			c.r.log.Error("relay: panic handling a message", "panic", v, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	// An address blocked since the last message is dropped (open
	// connections are also dropped when the block is made: expelBlocked).
	if v := c.r.ipVersion(); v != c.ipChecked {
		c.ipChecked = v
		if c.r.ipBlocked(c.ip) {
			c.out.shut(closePayload(websocket.ClosePolicyViolation, ipBlockedMessage))
			return false
		}
	}
	if max := c.r.limits.MaxMessageLength; max > 0 && len(msg) > max {
		c.tooLong(msg, max)
		return true
	}
	label, m, reason := parseMessage(msg)
	if reason != "" {
		c.send(noticeMessage(reason))
		return true
	}
	switch label {
	case "EVENT":
		c.spawn(func(ctx context.Context) { c.onEvent(ctx, m) })
	case "REQ":
		c.onReq(m)
	case "CLOSE":
		c.onClose(m)
	case "COUNT":
		c.spawn(func(ctx context.Context) { c.onCount(ctx, m) })
	case "AUTH":
		c.onAuth(m)
	case "NEG-OPEN":
		c.spawn(func(ctx context.Context) { c.onNegOpen(ctx, m) })
	case "NEG-MSG":
		c.spawn(func(ctx context.Context) { c.onNegMsg(m) })
	case "NEG-CLOSE":
		c.onNegClose(m)
	default:
		if len(label) > 32 {
			label = label[:32] + "…"
		}
		c.send(noticeMessage(fmt.Sprintf("invalid: unknown message type %q", label)))
	}
	return true
}

// onEvent handles ["EVENT", <event>]: accept's verdict, in an OK message.
func (c *conn) onEvent(ctx context.Context, m message) {
	id := m.eventID(1)
	if id == "" {
		c.send(noticeMessage("invalid: an EVENT message carries an event with an id"))
		return
	}
	start := time.Now()
	ok, reason := false, `invalid: an EVENT message is ["EVENT", <event>]`
	if len(m) == 2 {
		var ev *nostr.Event
		if ev, reason = m.event(1); reason == "" {
			ok, reason = answer(c.r.accept(ctx, fromClient(c.ip, c.authed()), ev))
		}
	}
	if strings.HasPrefix(reason, "auth-required:") {
		c.requestAuth()
	}
	c.send(okMessage(id, ok, reason))
	c.r.observer.EventAnswered(ok, reason, time.Since(start))
}

// tooLong answers a message over max_message_length the way its type
// expects: OK false for an EVENT, CLOSED for a REQ or COUNT.
func (c *conn) tooLong(msg []byte, max int) {
	reason := fmt.Sprintf("invalid: the message has %d bytes, at most %d allowed (max_message_length)", len(msg), max)
	label, m, _ := parseMessage(msg)
	switch label {
	case "EVENT":
		if id := m.eventID(1); id != "" {
			c.send(okMessage(id, false, reason))
			return
		}
	case "REQ", "COUNT":
		if id, bad := m.subID(); bad == "" {
			c.unsubscribe(id)
			c.send(closedMessage(id, reason))
			return
		}
	case "NEG-OPEN", "NEG-MSG":
		if id, bad := m.subID(); bad == "" {
			c.closeNeg(id)
			c.send(negError(id, "blocked: "+reason[len("invalid: "):]))
			return
		}
	}
	c.send(noticeMessage(reason))
}

// spawn runs f concurrently once fewer than maxInFlight messages of this
// connection are being handled.
func (c *conn) spawn(f func(ctx context.Context)) {
	select {
	case c.sem <- struct{}{}:
	case <-c.ctx.Done():
		return
	}
	go func() {
		defer func() { <-c.sem }()
		defer func() {
			if v := recover(); v != nil {
				c.r.log.Error("relay: panic handling a message", "panic", v, "stack", string(debug.Stack()))
				c.drop("internal error")
			}
		}()
		f(c.ctx)
	}()
}

// send queues an answer to this client (waiting for room, never for the network).
func (c *conn) send(f frame) { c.out.send(f) }

// writeLoop writes queued frames in batches and pings the client. A write
// that makes no progress for the write timeout drops the client.
func (c *conn) writeLoop() {
	defer close(c.written)
	ping := time.NewTicker(c.r.pingInterval)
	defer ping.Stop()
	var frames []frame
	for {
		var last bool
		frames, last = c.out.take(frames[:0], maxWriteBatch)
		if len(frames) > 0 {
			n, err := writeFrames(c.nc, frames, c.r.writeTimeout)
			clear(frames)
			c.out.written(n)
			if err != nil {
				c.drop("writing to it failed: " + err.Error())
				return
			}
		}
		if last {
			return
		}
		if len(frames) > 0 {
			continue
		}
		select {
		case <-c.out.wake:
		case <-ping.C:
			c.out.control(frame{op: opPing})
		}
	}
}

// drop disconnects the client at once, without waiting for anything it
// would have to read first. Safe to call from anywhere, more than once.
func (c *conn) drop(why string) {
	c.dropOnce.Do(func() {
		c.r.log.Info("relay: dropping a client", "ip", c.ip, "reason", why)
		c.out.close()
		c.cancel()
		c.nc.Close()
	})
}

// expel ends the connection of a client whose address is blocked: a close
// frame (policy violation) if it can still be written, then the socket.
func (c *conn) expel() {
	c.out.shut(closePayload(websocket.ClosePolicyViolation, ipBlockedMessage))
	go func() {
		select {
		case <-c.written:
		case <-time.After(time.Second):
		}
		c.drop("its address is blocked")
	}()
}

// end cleans up after the read loop: subscriptions leave the registry, the
// writer flushes what is queued (a close frame, say) for a moment, then the
// socket closes.
func (c *conn) end() {
	c.cancel()
	c.mu.Lock()
	subs := make([]*sub, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
		c.forget(s)
	}
	clear(c.negs)
	c.mu.Unlock()
	for _, s := range subs {
		c.r.subs.remove(s)
		s.close()
	}
	c.out.close()
	select {
	case <-c.written:
	case <-time.After(time.Second):
	}
	c.nc.Close()
	<-c.written
}

// authed lists the public keys this client authenticated as.
func (c *conn) authed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pubkeys
}

// requestAuth sends the NIP-42 challenge.
func (c *conn) requestAuth() { c.send(authMessage(c.challenge)) }
