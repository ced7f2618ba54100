// Package nostrclient is outpost's one outbound Nostr client: upstream sync,
// profile fetching and publishing all connect to other relays through it.
// A Conn reads in one loop that parses every relay message into a Message,
// bounds what one message may weigh, pings the relay and hangs up on one
// that stops answering; writes are JSON arrays with a deadline. What is
// done with the messages (NIP-77, paging, retries) stays with the callers.
//
// It is our own small client on purpose: go-nostr's Relay races with itself
// when a connection ends, and ends of connections are what its callers must
// survive.
package nostrclient

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/tick"
	"github.com/tidwall/gjson"
)

// Options configure a connection; the zero value is usable.
type Options struct {
	// NetDial opens the TCP connection. A caller connecting to an address a
	// user supplied passes a dialer guarded by netguard.Control, which sees
	// the address actually dialled (after DNS, so rebinding is caught);
	// then no proxy is used, since the guard would only see the proxy.
	// Handshakes never follow redirects. Nil: a plain dialer, and the
	// proxy from the environment.
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)

	DialTimeout  time.Duration // the TCP, TLS and websocket handshakes; default 10s
	ReadLimit    int64         // bytes of one relay message; default 1 MiB
	WriteTimeout time.Duration // one message written; default 10s
	// PingEvery is how often the relay is pinged; one that has sent nothing,
	// not even the pong, within PingEvery+PongWait is hung up on (a relay
	// that vanished without closing the connection). Default 30s, 15s.
	PingEvery, PongWait time.Duration
}

// ErrMessageTooBig is why reading stopped (Err, Next) when the relay sent
// a message over Options.ReadLimit: the connection is over.
var ErrMessageTooBig = websocket.ErrReadLimit

// Conn is one connection to a relay. Messages and Next are for one reader;
// Send may be called by several goroutines.
type Conn struct {
	ws   *websocket.Conn
	opt  Options
	in   chan Message
	err  error // why reading stopped; set before in is closed
	wmu  sync.Mutex
	stop context.CancelFunc
}

// Dial connects to url (ws:// or wss://). The connection ends when ctx
// ends or Close is called.
func Dial(ctx context.Context, url string, opt Options) (*Conn, error) {
	opt.DialTimeout = cmp.Or(opt.DialTimeout, 10*time.Second)
	opt.ReadLimit = cmp.Or(opt.ReadLimit, 1<<20)
	opt.WriteTimeout = cmp.Or(opt.WriteTimeout, 10*time.Second)
	opt.PingEvery = cmp.Or(opt.PingEvery, 30*time.Second)
	opt.PongWait = cmp.Or(opt.PongWait, 15*time.Second)
	d := websocket.Dialer{NetDialContext: opt.NetDial, HandshakeTimeout: opt.DialTimeout}
	if opt.NetDial == nil {
		d.Proxy = http.ProxyFromEnvironment
	}
	ws, resp, err := d.DialContext(ctx, url, nil)
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("%w (HTTP %s)", err, resp.Status)
		}
		return nil, err
	}
	ws.SetReadLimit(opt.ReadLimit)
	c := &Conn{ws: ws, opt: opt, in: make(chan Message, 64)}
	ctx, c.stop = context.WithCancel(ctx)
	context.AfterFunc(ctx, func() { ws.Close() })
	ws.SetPongHandler(func(string) error { c.alive(); return nil })
	go c.read(ctx)
	go c.keepalive(ctx)
	return c, nil
}

// Close hangs up at once, without a close handshake: one could wait on the
// relay for seconds.
func (c *Conn) Close() error {
	c.stop()
	return c.ws.Close()
}

// Messages are the relay's messages, in order; the channel is closed when
// the connection ends, and Err says why.
func (c *Conn) Messages() <-chan Message { return c.in }

// Err is why the connection ended, once Messages is closed.
func (c *Conn) Err() error { return c.err }

// Next returns the relay's next message, or why there is none.
func (c *Conn) Next(ctx context.Context) (Message, error) {
	select {
	case m, ok := <-c.in:
		if !ok {
			return Message{}, c.err
		}
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

// Send writes msg as one JSON array, such as Send(ctx, "REQ", sub, filter).
func (c *Conn) Send(ctx context.Context, msg ...any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(c.opt.WriteTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(deadline)
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// Req opens subscription sub for filters.
func (c *Conn) Req(ctx context.Context, sub string, filters ...nostr.Filter) error {
	msg := []any{"REQ", sub}
	for _, f := range filters {
		msg = append(msg, f)
	}
	return c.Send(ctx, msg...)
}

// Publish sends ev and waits for the relay's OK for it (what comes before
// it is dropped); reason is the OK's message.
func (c *Conn) Publish(ctx context.Context, ev *nostr.Event) (ok bool, reason string, err error) {
	if err := c.Send(ctx, "EVENT", ev); err != nil {
		return false, "", err
	}
	for {
		m, err := c.Next(ctx)
		if err != nil {
			return false, "", err
		}
		if m.Label == "OK" && m.Sub == ev.ID {
			return m.OK, m.Text, nil
		}
	}
}

// alive gives the relay another PingEvery+PongWait to say something.
func (c *Conn) alive() {
	c.ws.SetReadDeadline(time.Now().Add(c.opt.PingEvery + c.opt.PongWait))
}

func (c *Conn) read(ctx context.Context) {
	defer close(c.in)
	defer c.stop() // ends keepalive and closes the connection
	for {
		c.alive() // (the time our reader spends on a message is not the relay's)
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.err = cmp.Or(ctx.Err(), err)
			return
		}
		// A message that is not a relay message is passed on all the same,
		// with no Label, so that a caller's budget counts a flood of garbage.
		m, _ := parse(data)
		m.Size = len(data)
		select {
		case c.in <- m:
		case <-ctx.Done():
			c.err = ctx.Err()
			return
		}
	}
}

// keepalive pings; the read deadline hangs up on a relay that does not answer.
func (c *Conn) keepalive(ctx context.Context) {
	tick.Every(ctx, c.opt.PingEvery, func() bool {
		if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.opt.WriteTimeout)) != nil {
			c.ws.Close()
			return false
		}
		return true
	})
}

// A Message is one relay message (NIP-01, NIP-42, NIP-77). Label is its
// first element; Sub its second for those that name a subscription (EVENT,
// EOSE, CLOSED, NEG-MSG, NEG-ERR) or, for OK, the event id. Text is the
// reason of CLOSED, OK and NEG-ERR, the text of NOTICE, the challenge of
// AUTH and the payload of NEG-MSG. Label is "" for a message that is not a
// JSON array of at least two elements.
type Message struct {
	Label string
	Sub   string
	Text  string
	OK    bool         // OK: the event was accepted
	Event *nostr.Event // EVENT: the event, unverified; nil when it does not parse
	Size  int          // bytes of the message as received, for callers that budget them
}

// parse reads one relay message; ok is false for one that is not a JSON
// array of at least two elements.
func parse(data []byte) (m Message, ok bool) {
	arr := gjson.ParseBytes(data).Array()
	if len(arr) < 2 {
		return Message{}, false
	}
	m.Label = arr[0].String()
	switch m.Label {
	case "NOTICE", "AUTH":
		m.Text = arr[1].String()
		return m, true
	}
	m.Sub = arr[1].String()
	switch {
	case len(arr) < 3:
	case m.Label == "EVENT":
		var ev nostr.Event
		if json.Unmarshal([]byte(arr[2].Raw), &ev) == nil {
			m.Event = &ev
		}
	case m.Label == "OK":
		m.OK = arr[2].Bool()
		if len(arr) > 3 {
			m.Text = arr[3].String()
		}
	default:
		m.Text = arr[2].String()
	}
	return m, true
}
