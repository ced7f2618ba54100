package testkit

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections on 127.0.0.1 to a target: a service that
// a test can take away (Down: the listener and every connection closed) and
// bring back (Up: listening on the same address again).
type Proxy struct {
	target, addr string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// NewProxy listens on a free port of 127.0.0.1 and forwards to target
// (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Down closes the listener and every connection through the proxy.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Up listens on the proxy's address again.
func (p *Proxy) Up(t testing.TB) {
	t.Helper()
	var ln net.Listener
	WaitFor(t, 5*time.Second, "the proxy's port to be free", func() bool {
		var err error
		ln, err = net.Listen("tcp", p.addr)
		return err == nil
	})
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
			if err != nil {
				client.Close()
				continue
			}
			if !p.track(ln, client, server) {
				return
			}
			go func() { io.Copy(server, client); server.Close(); client.Close() }()
			go func() { io.Copy(client, server); client.Close(); server.Close() }()
		}
	}()
}

// track remembers a connection pair unless the proxy went down meanwhile.
func (p *Proxy) track(ln net.Listener, conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != ln {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}
