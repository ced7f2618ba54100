// Package lnurl is a client for Lightning addresses: LUD-16 (user@domain)
// resolved to a LUD-06 payRequest, whose callback returns a bolt11 invoice
// for an amount. Everything the remote server says is capped, time-limited
// and checked, because anyone can put any address in a profile.
package lnurl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/guard/netguard"
)

// MaxBody caps every response body read from a Lightning-address server.
const MaxBody = 64 << 10

// Address is a Lightning address, user@domain (LUD-16).
type Address struct {
	User   string
	Domain string // host or host:port, lowercase
}

func (a Address) String() string { return a.User + "@" + a.Domain }

// LUD-16 allows a-z0-9-_.+ in the user name.
var userRe = regexp.MustCompile(`^[a-z0-9._+-]{1,64}$`)

// ParseAddress parses user@domain; it is a 400 invalid_lightning_address otherwise.
func ParseAddress(s string) (Address, error) {
	bad := outpost.Errorf(outpost.Invalid, "invalid_lightning_address", "%q is not a Lightning address (user@domain)", truncate(s, 80))
	s = strings.ToLower(strings.TrimSpace(s))
	user, domain, ok := strings.Cut(s, "@")
	if !ok || !userRe.MatchString(user) || len(domain) > 253 || domain == "" {
		return Address{}, bad
	}
	u, err := url.Parse("https://" + domain)
	if err != nil || u.Host != domain || u.Hostname() == "" || strings.ContainsAny(domain, "/?#@ ") {
		return Address{}, bad
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return Address{}, bad
		}
	}
	return Address{User: user, Domain: domain}, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Options configure a Client.
type Options struct {
	// AllowHTTP lets addresses at IP literals and localhost be fetched over
	// plain http, and callbacks be http URLs. For tests and local demos only.
	AllowHTTP bool
	// AllowPrivate lets the client connect to loopback, private and
	// link-local addresses; off, a profile cannot make the faucet call into
	// its own network.
	AllowPrivate bool
	Timeout      time.Duration // per request; default 5s
}

// Client resolves Lightning addresses and fetches invoices.
type Client struct {
	opt  Options
	http *http.Client
}

// New returns a client with its own transport.
func New(opt Options) *Client {
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Second
	}
	dialer := &net.Dialer{Timeout: opt.Timeout}
	if !opt.AllowPrivate {
		dialer.Control = netguard.Control
	}
	tr := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   opt.Timeout,
		ResponseHeaderTimeout: opt.Timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
	}
	return &Client{opt: opt, http: &http.Client{
		Transport: tr,
		Timeout:   opt.Timeout,
		// A redirect could lead anywhere (and http → https downgrades are
		// not ours to judge); a well-behaved server answers directly.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// PayParams is a LUD-06 payRequest.
type PayParams struct {
	Callback        string `json:"callback"`
	MinSendableMsat int64  `json:"minSendable"`
	MaxSendableMsat int64  `json:"maxSendable"`
	Metadata        string `json:"metadata"`
	Tag             string `json:"tag"`
}

func unreachable(addr Address, reason string) *outpost.Error {
	return outpost.Errorf(outpost.BadGateway, "lightning_address_unreachable",
		"the Lightning address %s could not be used: %s", addr, reason).With("reason", reason)
}

// wellKnown is the LUD-16 URL of the address.
func (c *Client) wellKnown(a Address) string {
	scheme := "https"
	if c.opt.AllowHTTP {
		host := a.Domain
		if h, _, err := net.SplitHostPort(a.Domain); err == nil {
			host = h
		}
		if _, err := netip.ParseAddr(host); err == nil || host == "localhost" {
			scheme = "http"
		}
	}
	return scheme + "://" + a.Domain + "/.well-known/lnurlp/" + url.PathEscape(a.User)
}

// Resolve fetches the address's payRequest.
func (c *Client) Resolve(ctx context.Context, a Address) (PayParams, error) {
	var p PayParams
	if err := c.getJSON(ctx, a, c.wellKnown(a), &p); err != nil {
		return PayParams{}, err
	}
	if p.Tag != "payRequest" {
		return PayParams{}, unreachable(a, "the server did not answer with a payRequest")
	}
	cb, err := url.Parse(p.Callback)
	if err != nil || cb.Host == "" || !(cb.Scheme == "https" || cb.Scheme == "http" && c.opt.AllowHTTP) {
		return PayParams{}, unreachable(a, "the payRequest has no usable https callback")
	}
	if p.MinSendableMsat <= 0 || p.MaxSendableMsat < p.MinSendableMsat {
		return PayParams{}, unreachable(a, "the payRequest has no valid amount range")
	}
	return p, nil
}

// Accepts reports whether the payRequest takes amountSats; if not it is a
// 422 amount_not_accepted.
func (p PayParams) Accepts(a Address, amountSats int64) error {
	if msat := amountSats * 1000; msat < p.MinSendableMsat || msat > p.MaxSendableMsat {
		return outpost.Errorf(outpost.Unprocessable, "amount_not_accepted",
			"the Lightning address %s accepts %d to %d sats, not %d", a, (p.MinSendableMsat+999)/1000, p.MaxSendableMsat/1000, amountSats).
			With("min_sats", (p.MinSendableMsat+999)/1000).With("max_sats", p.MaxSendableMsat/1000)
	}
	return nil
}

// Invoice asks the callback for an invoice of amountSats and checks that it
// is one: for that amount, committing to the payRequest's metadata when it
// commits to a description hash at all, and not expired at now.
func (c *Client) Invoice(ctx context.Context, a Address, p PayParams, amountSats int64, network bolt11.Network, now time.Time) (bolt11.Invoice, error) {
	if err := p.Accepts(a, amountSats); err != nil {
		return bolt11.Invoice{}, err
	}
	cb, _ := url.Parse(p.Callback)
	q := cb.Query()
	q.Set("amount", strconv.FormatInt(amountSats*1000, 10))
	cb.RawQuery = q.Encode()
	var resp struct {
		PR string `json:"pr"`
	}
	if err := c.getJSON(ctx, a, cb.String(), &resp); err != nil {
		return bolt11.Invoice{}, err
	}
	inv, err := bolt11.Decode(resp.PR)
	if err != nil {
		return bolt11.Invoice{}, unreachable(a, "the callback did not return a bolt11 invoice")
	}
	if err := inv.Check(network, amountSats, now); err != nil {
		return bolt11.Invoice{}, unreachable(a, "the invoice it returned is unusable: "+outpost.AsError(err).Message)
	}
	// LUD-06 has the invoice commit to the metadata. Servers that mint the
	// invoice elsewhere (a Cashu mint quote, say) put a plain description in
	// it instead; those are accepted, a wrong commitment is not.
	if inv.DescriptionHash != "" {
		sum := sha256.Sum256([]byte(p.Metadata))
		if inv.DescriptionHash != hex.EncodeToString(sum[:]) {
			return bolt11.Invoice{}, unreachable(a, "the invoice does not commit to the payRequest metadata")
		}
	}
	return inv, nil
}

// getJSON fetches u and decodes a JSON object, turning LUD-06 {"status":
// "ERROR"} answers and every transport failure into 502s.
func (c *Client) getJSON(ctx context.Context, a Address, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return unreachable(a, "invalid URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			return unreachable(a, "it points to a private network address")
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return unreachable(a, "the server did not answer in time")
		}
		return unreachable(a, "the server could not be reached")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return unreachable(a, "the answer could not be read")
	}
	if len(body) > MaxBody {
		return unreachable(a, "the answer is too large")
	}
	var status struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	json.Unmarshal(body, &status)
	if strings.EqualFold(status.Status, "ERROR") {
		return unreachable(a, "the server refused: "+truncate(status.Reason, 200))
	}
	if resp.StatusCode != http.StatusOK {
		return unreachable(a, fmt.Sprintf("the server answered HTTP %d", resp.StatusCode))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return unreachable(a, "the answer is not the expected JSON")
	}
	return nil
}
