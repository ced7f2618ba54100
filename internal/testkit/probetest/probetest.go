// Package probetest runs the proxies a prober may be told to dial through,
// on 127.0.0.1 for tests: a SOCKS5 server (as Tor's SOCKS port) and an HTTP
// proxy that CONNECTs. Each maps names to addresses of its own (an onion
// service name to a test mint) and records what it was asked for.
package probetest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is a running test proxy.
type Proxy struct {
	URL string // socks5://127.0.0.1:port or http://127.0.0.1:port

	hosts map[string]string // name:port → the address dialled instead
	mu    sync.Mutex
	asked []string
}

// Asked lists the targets (host:port) the proxy was asked for, in order.
func (p *Proxy) Asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// dial connects to target, or to what hosts maps it to.
func (p *Proxy) dial(target string) (net.Conn, error) {
	p.mu.Lock()
	p.asked = append(p.asked, target)
	p.mu.Unlock()
	if to, ok := p.hosts[target]; ok {
		target = to
	}
	return net.DialTimeout("tcp", target, 5*time.Second)
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// SOCKS5 starts a SOCKS5 server (RFC 1928, no authentication, CONNECT
// only) that dials hosts' mapping of a target ("name.onion:80" →
// "127.0.0.1:3338") instead of the target.
func SOCKS5(t testing.TB, hosts map[string]string) *Proxy {
	ln := listen(t)
	p := &Proxy{URL: "socks5://" + ln.Addr().String(), hosts: hosts}
	go serve(ln, p.socks)
	return p
}

// Connect starts an HTTP proxy that answers CONNECT only, mapping targets
// as SOCKS5 does.
func Connect(t testing.TB, hosts map[string]string) *Proxy {
	ln := listen(t)
	p := &Proxy{URL: "http://" + ln.Addr().String(), hosts: hosts}
	go serve(ln, p.connect)
	return p
}

func serve(ln net.Listener, handle func(c net.Conn) (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			up, err := handle(c)
			if err != nil {
				c.Close()
				return
			}
			c.SetDeadline(time.Time{})
			go func() { io.Copy(up, c); up.Close() }()
			io.Copy(c, up)
			c.Close()
		}()
	}
}

func (p *Proxy) socks(c net.Conn) (net.Conn, error) {
	r := bufio.NewReader(c)
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil || head[0] != 5 {
		return nil, errors.New("not SOCKS5")
	}
	if _, err := io.ReadFull(r, make([]byte, head[1])); err != nil {
		return nil, err
	}
	c.Write([]byte{5, 0}) // no authentication
	var req [4]byte
	if _, err := io.ReadFull(r, req[:]); err != nil || req[1] != 1 {
		return nil, errors.New("not CONNECT")
	}
	var host string
	switch req[3] {
	case 1, 4: // IPv4, IPv6
		ip := make([]byte, map[byte]int{1: 4, 4: 16}[req[3]])
		if _, err := io.ReadFull(r, ip); err != nil {
			return nil, err
		}
		host = net.IP(ip).String()
	case 3: // a name
		n, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(r, name); err != nil {
			return nil, err
		}
		host = string(name)
	default:
		return nil, errors.New("bad address type")
	}
	var port [2]byte
	if _, err := io.ReadFull(r, port[:]); err != nil {
		return nil, err
	}
	up, err := p.dial(net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:])))))
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return nil, err
	}
	_, err = c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	return up, err
}

func (p *Proxy) connect(c net.Conn) (net.Conn, error) {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return nil, err
	}
	if req.Method != http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return nil, errors.New("not CONNECT")
	}
	up, err := p.dial(req.Host)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return nil, err
	}
	_, err = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	return up, err
}

// Behaviour is how a hostile proxy (Hostile) treats whoever dials it.
type Behaviour int

const (
	Hang    Behaviour = iota // accept, read what comes, never answer
	Trickle                  // answer a byte a second, an answer that never ends
	Flood                    // answer as fast as the client reads, an answer that never ends
)

// Hostile starts a proxy of scheme "socks5" or "http" that never lets a
// dial through. Its endless answer is a well-formed start (SOCKS5's
// handshake and success, or "HTTP/1.1 200") and then header lines forever,
// so a client parsing it keeps reading for as long as it lets the proxy
// talk. The proxy closes its end when the client closes its own, so a
// client that leaks holds two descriptors per dial, and one that does not,
// none.
func Hostile(t testing.TB, scheme string, b Behaviour) *Proxy {
	ln := listen(t)
	p := &Proxy{URL: scheme + "://" + ln.Addr().String()}
	start := "HTTP/1.1 200 Connection established\r\n"
	if scheme == "socks5" {
		start = "\x05\x00" + "\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00" + "HTTP/1.1 200 OK\r\n"
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.misbehave(c, b, start)
		}
	}()
	return p
}

// misbehave answers c as b says until the client goes away.
func (p *Proxy) misbehave(c net.Conn, b Behaviour, start string) {
	defer c.Close()
	if b == Hang {
		io.Copy(io.Discard, c) // until the client closes
		return
	}
	go func() { io.Copy(io.Discard, c); c.Close() }() // the request; its end is the client's going
	answer := endless(start)
	one := make([]byte, 1)
	for {
		var err error
		if b == Trickle {
			one[0], _ = answer.ReadByte()
			_, err = c.Write(one)
			time.Sleep(time.Second) // a byte a second: the trickle is the fault
		} else {
			_, err = io.CopyN(c, answer, 4096)
		}
		if err != nil {
			return
		}
	}
}

// endless reads start, then "X-Pad: aaaa…\r\n" lines forever.
func endless(start string) *bufio.Reader {
	line := []byte("X-Pad: " + strings.Repeat("a", 64) + "\r\n")
	var i int
	return bufio.NewReader(io.MultiReader(strings.NewReader(start), readerFunc(func(b []byte) (int, error) {
		n := 0
		for n < len(b) {
			c := copy(b[n:], line[i:])
			n += c
			i = (i + c) % len(line)
		}
		return n, nil
	})))
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }
