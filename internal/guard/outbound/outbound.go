// Package outbound is the HTTP client of the counterparts the operator
// names and outpost calls through whatever proxy the environment sets
// (HTTPS_PROXY, ALL_PROXY): the ban list's primary, the faucet's mint.
package outbound

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Transport is http.DefaultTransport's, environment proxies included, with
// one request per connection and every connection closed within life of
// its dial, whatever the other end says or withholds. net/http dials
// detached from the request, so that a later request may use the
// connection, and runs an environment SOCKS5 proxy's handshake with no
// deadline at all: a proxy that accepts and never answers would otherwise
// keep a descriptor and a goroutine per request for as long as it likes.
// life must cover the longest request made with it.
func Transport(life time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true // a connection's deadline is its one request's
	t.ForceAttemptHTTP2 = false
	d := &net.Dialer{Timeout: life, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.SetDeadline(time.Now().Add(life))
		return c, nil
	}
	return t
}

// Client is a client whose requests, and connections, end within timeout.
func Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: Transport(timeout)}
}
