// Package probe checks Cashu mints over HTTP and schedules those checks.
//
// The Client fetches a mint's NUT-06 info (GET /v1/info) and keysets with a
// timeout, a body cap, a bounded redirect policy and an SSRF guard at dial
// time; every way a mint can misbehave comes back as a Result with an error
// kind rather than an error. The Prober (prober.go) runs a probe function per
// target on a jittered schedule, after Tailscale's prober.
package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/netguard"
)

// Error kinds of a failed check.
const (
	KindTimeout          = "timeout"
	KindDNS              = "dns_error"
	KindRefused          = "connection_refused"
	KindConnection       = "connection_error"
	KindTLS              = "tls_error"
	KindBlocked          = "blocked_address"
	KindRedirectLoop     = "redirect_loop"
	KindTooManyRedirects = "too_many_redirects"
	KindHTTPStatus       = "http_error"
	KindRateLimited      = "rate_limited"
	KindHTML             = "html"
	KindInvalidJSON      = "invalid_json"
	KindInvalidInfo      = "invalid_info"
	KindTooLarge         = "body_too_large"
	KindNetwork          = "network_error"
	KindNeedsProxy       = "needs_proxy" // an onion service, and no proxy to reach it
)

// Defaults of ClientOptions.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxInfoBytes = 256 << 10
	maxRedirects        = 3
)

// ClientOptions configure a Client.
type ClientOptions struct {
	Timeout      time.Duration // per request, body included; default 10 s
	MaxBodyBytes int64         // per response; default 256 KiB
	AllowPrivate bool          // allow loopback/private/link-local addresses (tests, local mints)
	Allow        []string      // exact addresses ("127.0.0.1:3338") allowed anyway: mints outpost runs itself
	UserAgent    string
	// Proxy, when set, is dialled for every mint (ParseProxy); the guard
	// then judges what the proxy is asked for, not the proxy itself.
	Proxy *url.URL
}

// Client fetches from mints. It is safe for concurrent use.
type Client struct {
	http    *http.Client
	timeout time.Duration
	maxBody int64
	ua      string
}

// NewClient returns a Client. Connections are not reused, so every check's
// RTT includes connecting, as a wallet's first request would.
func NewClient(o ClientOptions) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxInfoBytes
	}
	if o.UserAgent == "" {
		o.UserAgent = "outpost-mintdir/" + outpost.Version + " (+https://github.com/outpost-relay/outpost)"
	}
	dialer := &net.Dialer{Timeout: o.Timeout}
	if !o.AllowPrivate {
		dialer.Control = netguard.ControlExcept(o.Allow...)
	}
	dial := direct(dialer)
	if o.Proxy != nil {
		dial = newProxied(o.Proxy, o, dialer).DialContext
	}
	tr := &http.Transport{
		Proxy:                  nil, // the transport's proxy would dial for us, past the guard: ours is in dial
		DialContext:            bounded(dial, o.Timeout),
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    o.Timeout,
		ResponseHeaderTimeout:  o.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		DisableKeepAlives:      true,
		DisableCompression:     false,
	}
	c := &http.Client{Transport: tr, CheckRedirect: checkRedirect}
	return &Client{http: c, timeout: o.Timeout, maxBody: o.MaxBodyBytes, ua: o.UserAgent}
}

// checkKey is the context value that carries a check's own context to the
// dial: net/http dials under a context detached from the request's (with
// its values but neither its deadline nor its cancellation), so that a
// later request may use the connection. Ours are never reused, and a dial
// that outlives its check is a connection held open on a counterpart's say.
type checkKey struct{}

func withCheck(ctx context.Context) context.Context { return context.WithValue(ctx, checkKey{}, ctx) }

// bounded makes every dial, a proxy's handshake included, end when the
// check that asked for it ends, and within timeout in any case: a proxy
// that accepts and never answers, or answers a byte a second, cannot hold
// a descriptor and a goroutine past the check.
func bounded(dial func(ctx context.Context, network, addr string) (net.Conn, error), timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if check, ok := ctx.Value(checkKey{}).(context.Context); ok {
			defer context.AfterFunc(check, cancel)()
		}
		return dial(ctx, network, addr)
	}
}

var (
	errRedirectLoop     = errors.New("redirect loop")
	errTooManyRedirects = errors.New("too many redirects")
	errRedirectScheme   = errors.New("redirect to a non-http(s) URL")
)

// checkRedirect follows a few redirects, never in a circle and only to http(s);
// the dial guard still vets every address.
func checkRedirect(req *http.Request, via []*http.Request) error {
	for _, v := range via {
		if v.URL.String() == req.URL.String() {
			return errRedirectLoop
		}
	}
	if len(via) > maxRedirects {
		return errTooManyRedirects
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return errRedirectScheme
	}
	return nil
}

// Result is the outcome of one check of a mint.
type Result struct {
	At         time.Time     // when the request started
	RTT        time.Duration // until the whole body was read; 0 when there was no answer
	OK         bool
	Skipped    bool   // the mint answered 429: it is up but asks us to slow down
	ErrKind    string // one of the Kind constants when !OK
	Err        string // detail for logs
	HTTPStatus int    // 0 when there was no HTTP answer
	Body       []byte // the info JSON when OK
}

// Info checks a mint: GET <base>/v1/info, which must answer a NUT-06 JSON
// object. now stamps the result (the caller's clock).
func (c *Client) Info(ctx context.Context, base string, now func() time.Time) Result {
	res := Result{At: now()}
	start := time.Now()
	status, body, err := c.get(ctx, base+"/v1/info")
	res.HTTPStatus = status
	if status != 0 {
		res.RTT = time.Since(start)
	}
	switch {
	case err != nil:
		res.ErrKind, res.Err = classify(err), err.Error()
	case status == http.StatusTooManyRequests:
		res.ErrKind, res.Skipped = KindRateLimited, true
	case status < 200 || status > 299:
		res.ErrKind, res.Err = KindHTTPStatus, fmt.Sprintf("HTTP %d", status)
	default:
		res.ErrKind, res.Err = checkInfo(body)
		if res.ErrKind == "" {
			res.OK, res.Body = true, body
		}
	}
	return res
}

// Keysets fetches GET <base>/v1/keysets (NUT-02); the body is returned as is.
func (c *Client) Keysets(ctx context.Context, base string) ([]byte, error) {
	status, body, err := c.get(ctx, base+"/v1/keysets")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("keysets: HTTP %d", status)
	}
	if !json.Valid(body) {
		return nil, errors.New("keysets: invalid JSON")
	}
	return body, nil
}

// errTooLarge is a body over the cap.
var errTooLarge = errors.New("response body too large")

// get fetches a JSON document within the client's timeout and body cap.
func (c *Client) get(ctx context.Context, url string) (status int, body []byte, err error) {
	return c.Fetch(ctx, url, "application/json")
}

// Fetch GETs url asking for accept, under the client's SSRF guard, timeout,
// redirect policy and body cap (a larger body is an error). The pages fetch
// mint icons with it, so a mint's icon_url can reach no more than its info.
func (c *Client) Fetch(ctx context.Context, url, accept string) (status int, body []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(withCheck(ctx), http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("User-Agent", c.ua)
	req.Header.Set("Accept", accept)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > c.maxBody {
		return resp.StatusCode, nil, errTooLarge
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if int64(len(body)) > c.maxBody {
		return resp.StatusCode, nil, errTooLarge
	}
	return resp.StatusCode, body, nil
}

// checkInfo accepts a JSON object that looks like NUT-06 info: a pubkey
// string or a nuts object. Parsing the fields is the directory's job.
func checkInfo(body []byte) (kind, detail string) {
	b := bytes.TrimSpace(body)
	if len(b) > 0 && b[0] == '<' {
		return KindHTML, "the mint answered HTML"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || len(b) == 0 || errors.Is(err, io.ErrUnexpectedEOF) {
			return KindInvalidJSON, "the info is not valid JSON"
		}
		return KindInvalidInfo, "the info is not a JSON object"
	}
	var pubkey string
	var nuts map[string]json.RawMessage
	okPub := json.Unmarshal(obj["pubkey"], &pubkey) == nil && pubkey != ""
	okNuts := json.Unmarshal(obj["nuts"], &nuts) == nil && nuts != nil
	if !okPub && !okNuts {
		return KindInvalidInfo, "the info has neither a pubkey nor nuts"
	}
	return "", ""
}

// classify turns a transport error into an error kind.
func classify(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var alert tls.AlertError
	var netErr net.Error
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		return KindBlocked
	case errors.Is(err, errNeedsProxy):
		return KindNeedsProxy
	case errors.Is(err, errRedirectLoop):
		return KindRedirectLoop
	case errors.Is(err, errTooManyRedirects), errors.Is(err, errRedirectScheme):
		return KindTooManyRedirects
	case errors.Is(err, errTooLarge):
		return KindTooLarge
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return KindTimeout
	case errors.As(err, &dnsErr):
		return KindDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr),
		errors.As(err, &invalidCert), errors.As(err, &recordErr), errors.As(err, &alert),
		strings.Contains(err.Error(), "tls: "), strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		return KindTLS
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "server closed"):
		return KindConnection
	}
	return KindNetwork
}
