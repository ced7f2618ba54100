package probe

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/net/proxy"

	"github.com/outpost-relay/outpost/internal/guard/netguard"
)

// ParseProxy reads a proxy URL, socks5://[user:pass@]host:port (Tor's SOCKS
// port, say) or http://[user:pass@]host:port (a proxy that CONNECTs). An
// empty string is no proxy.
func ParseProxy(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	if u.Scheme != "socks5" && u.Scheme != "http" {
		return nil, fmt.Errorf("scheme %q: want socks5:// or http://", u.Scheme)
	}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || u.Hostname() == "" || port == "" {
		return nil, errors.New("want host:port after the scheme")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("want no path, query or fragment")
	}
	return u, nil
}

// proxied dials mints through a proxy. The proxy's own address is the
// operator's and is dialled unguarded; what the proxy is asked to reach is
// guarded instead: an IP address must be public, a name is resolved here
// and the proxy asked for one of its addresses (all of them public), and
// only an onion service name is handed to the proxy to resolve itself.
// Exact addresses the client allows (outpost's own mints, on this host) are
// dialled directly: no proxy elsewhere could reach them.
type proxied struct {
	proxy        *url.URL
	direct       *net.Dialer // to the proxy
	guarded      *net.Dialer // to the allowed addresses
	allowed      map[string]bool
	allowPrivate bool
	socks        proxy.ContextDialer
}

func newProxied(u *url.URL, o ClientOptions, guarded *net.Dialer) *proxied {
	p := &proxied{proxy: u, direct: &net.Dialer{Timeout: o.Timeout}, guarded: guarded,
		allowed: map[string]bool{}, allowPrivate: o.AllowPrivate}
	for _, a := range o.Allow {
		p.allowed[a] = true
	}
	if u.Scheme == "socks5" {
		var auth *proxy.Auth
		if u.User != nil {
			pass, _ := u.User.Password()
			auth = &proxy.Auth{User: u.User.Username(), Password: pass}
		}
		d, _ := proxy.SOCKS5("tcp", u.Host, auth, p.direct) // never fails
		p.socks = d.(proxy.ContextDialer)
	}
	return p
}

// DialContext is the transport's dial: a guarded target, through the proxy.
func (p *proxied) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.allowed[addr] {
		return p.guarded.DialContext(ctx, network, addr)
	}
	target, err := p.target(ctx, addr)
	if err != nil {
		return nil, err
	}
	if p.socks != nil {
		return p.socks.DialContext(ctx, "tcp", target)
	}
	return p.connect(ctx, target)
}

// target is what the proxy is asked for: addr itself when its host is an
// IP address or an onion service name, else one address its name resolves
// to (an IPv4 one first: the proxy may have no IPv6 route).
func (p *proxied) target(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if netguard.Onion(host) {
		return addr, netguard.CheckOnion(host)
	}
	ips, err := netguard.Resolve(ctx, nil, host, p.allowPrivate)
	if err != nil {
		return "", err
	}
	ip := ips[0]
	for _, a := range ips {
		if a.Is4() {
			ip = a
			break
		}
	}
	return netip.AddrPortFrom(ip, port16(port)).String(), nil
}

func port16(s string) uint16 { // SplitHostPort of a dialled address: a valid port
	n, _ := strconv.ParseUint(s, 10, 16)
	return uint16(n)
}

// errNeedsProxy is a dial of an onion service without a proxy: no resolver
// may look its name up (RFC 7686), so it is refused before one is asked.
var errNeedsProxy = errors.New("an onion service is reached only through a proxy (--probe-proxy)")

// direct is the transport's dial without a proxy.
func direct(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil && netguard.Onion(host) {
			return nil, errNeedsProxy
		}
		return d.DialContext(ctx, network, addr)
	}
}

// maxConnectAnswer bounds the proxy's answer to CONNECT.
const maxConnectAnswer = 16 << 10

// connect asks an HTTP proxy to CONNECT to target (RFC 9110 9.3.6).
func (p *proxied) connect(ctx context.Context, target string) (net.Conn, error) {
	c, err := p.direct.DialContext(ctx, "tcp", p.proxy.Host)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if u := p.proxy.User; u != nil {
		pass, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)))
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	br := bufio.NewReaderSize(&limited{c, maxConnectAnswer}, 4096)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("proxy: CONNECT %s: %s", target, resp.Status)
	}
	if br.Buffered() > 0 { // a proxy must not speak for the mint before the tunnel is ours
		c.Close()
		return nil, errors.New("proxy: data before the tunnel")
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// limited reads at most n bytes from the connection: the proxy's answer.
type limited struct {
	net.Conn
	n int
}

func (l *limited) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("proxy: answer too long")
	}
	b = b[:min(len(b), l.n)]
	n, err := l.Conn.Read(b)
	l.n -= n
	return n, err
}
