// Package relaytest connects go-nostr clients to a relay under test so that
// the race detector only sees the code under test.
//
// go-nostr v0.52.1's client races with itself whenever its connection ends
// (its writer sets Connection = nil while its reader's close reads it). So
// Dial goes through a sticky proxy: Freeze it before the relay shuts down
// and the client never hears the close. (outpost's relay has none of
// khatru's racy listener list, so tests may subscribe, close and publish in
// any order.)
package relaytest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// Proxy forwards connections to a relay; after Freeze it drops what the
// relay sends, hanging up on the relay then, and leaves the client's side
// open.
type Proxy struct {
	ln     net.Listener
	frozen atomic.Bool
}

// NewProxy listens on 127.0.0.1 and forwards to target (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				continue // the client stays connected and hears nothing
			}
			go func() {
				io.Copy(server, client)
				// The relay hung up: keep reading what the client sends (its
				// pings) so the connection stays referenced and open; were it
				// collected and closed, go-nostr would race with itself.
				io.Copy(io.Discard, client)
			}()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 && p.frozen.Load() {
						// Frozen: hang up on the relay as a client that hears its
						// close would, so that its shutdown does not wait out its
						// grace for an answer that cannot come (a second a test).
						err = net.ErrClosed
					} else if n > 0 {
						client.Write(buf[:n])
					}
					if err != nil {
						server.Close()
						return
					}
				}
			}()
		}
	}()
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops forwarding to clients; call it before the relay shuts down.
func (p *Proxy) Freeze() { p.frozen.Store(true) }

// Dial connects a go-nostr client to the relay at url (http:// or ws://)
// through a new Proxy, frozen when the test ends (cleanups run last-in,
// first-out, so before a relay started earlier is shut down). Freeze it
// yourself if the relay goes away during the test. Don't Close the client.
func Dial(t testing.TB, url string) (*nostr.Relay, *Proxy) {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "ws://")
	host = strings.TrimSuffix(host, "/")
	p := NewProxy(t, host)
	t.Cleanup(p.Freeze)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := nostr.RelayConnect(ctx, "ws://"+p.Addr())
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	return r, p
}

// Publish sends ev and waits for the relay's OK; the error carries a refusal's message.
func Publish(t testing.TB, r *nostr.Relay, ev nostr.Event) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.Publish(ctx, ev)
}

// Query returns the stored events matching f, then closes its subscription.
func Query(t testing.TB, r *nostr.Relay, f nostr.Filter) []*nostr.Event {
	t.Helper()
	sub, err := r.Subscribe(context.Background(), nostr.Filters{f})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsub()
	var out []*nostr.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-sub.Events:
			out = append(out, ev)
		case <-sub.EndOfStoredEvents:
			// Events sent before EOSE may still be queued in the channel.
			for {
				select {
				case ev := <-sub.Events:
					out = append(out, ev)
				default:
					return out
				}
			}
		case <-timeout:
			t.Fatal("no EOSE")
		}
	}
}

// Sign makes a signed event.
func Sign(t testing.TB, sk string, kind int, content string, tags ...nostr.Tag) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Content: content, Tags: tags}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// SmallReceiveBuffer dials TCP connections with a receive buffer of n bytes,
// so that a client that stops reading stalls the relay's writes soon. It
// fits websocket dialers' NetDialContext and http.Transport's DialContext.
func SmallReceiveBuffer(n int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(n)
		}
		return c, err
	}
}

// ReadSlowly reads c's messages at about bytesPerSecond until reading
// fails. Reading also answers the relay's pings, as a live client does.
func ReadSlowly(c *websocket.Conn, bytesPerSecond int) {
	buf := make([]byte, 512)
	for {
		_, r, err := c.NextReader()
		if err != nil {
			return
		}
		for {
			k, err := r.Read(buf)
			time.Sleep(time.Duration(k) * time.Second / time.Duration(bytesPerSecond)) // the throttle: a slow link is the behaviour under test
			if err != nil {
				break
			}
		}
	}
}

// NewKey makes a key pair (hex).
func NewKey() (sk, pk string) {
	sk = nostr.GeneratePrivateKey()
	pk, _ = nostr.GetPublicKey(sk)
	return sk, pk
}

// Relay is what Serve needs of outpost's relay.
type Relay interface {
	TrackConn(c net.Conn, state http.ConnState)
	CloseClients(ctx context.Context)
}

// Serve starts srv (created unstarted, its handler set) with rl tracking
// its connections, and when the test ends closes the server, then the
// relay's websocket clients, then db, the store under the relay, unless
// nil (a store storetest opened closes itself after that).
func Serve(t testing.TB, srv *httptest.Server, rl Relay, db io.Closer) {
	t.Helper()
	srv.Config.ConnState = rl.TrackConn
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Close()
		rl.CloseClients(ctx)
		if db != nil {
			db.Close()
		}
	})
}
