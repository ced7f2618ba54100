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
