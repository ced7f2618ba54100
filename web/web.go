// Package web serves outpost's pages for people: a landing page at the
// relay's root, the faucet, the mint directory with a page per mint, and the
// ban list's moderation console.
//
// The pages are clients of the documented REST interfaces: the server calls
// each service's own HTTP handler in-process and renders what it answers
// (html/template, SVG charts drawn here), so a page shows exactly what the API
// says, with its validation, limits and error messages. What needs a
// signature or an API key (signing in to the faucet with NIP-07, claiming,
// moderating) is done by small scripts in the browser calling the same APIs.
// Lists and mint pages work with JavaScript disabled.
//
// The pages take no API path: the exact mount paths ("/faucet/",
// "/mintdir/", "/banlist/") and "/" answer HTML only to browsers (Accept:
// text/html) and are passed on to the API or the relay otherwise; mint pages
// live under "<mintdir>/mint/", assets under "/static/", and QR codes are
// drawn by POST /qr, none of which any API uses.
package web

import (
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/probe"
)

// Service is one REST service the pages call.
type Service struct {
	Mount string       // "/faucet"
	API   http.Handler // its router, with paths relative to Mount; nil: no pages for it
}

// Config wires the pages.
type Config struct {
	Log       *slog.Logger
	PublicURL string // OUTPOST_PUBLIC_URL: the faucet's NIP-98 events are signed for it
	RelayURL  string // ws(s):// address of the relay, shown on the landing page

	Banlist, Faucet, Mintdir Service

	RateLimit      *ratelimit.Limiter // per client IP over every page; nil: none
	TrustedProxies []string
	BlockedIP      func(ip string) bool // client IPs refused every page (403); nil: none
	// AllowPrivateIcons lets the icon proxy fetch from loopback and private
	// addresses (OUTPOST_PROBE_ALLOW_PRIVATE, for local tests).
	AllowPrivateIcons bool
	// BootstrapKey says the ban list has a bootstrap admin key
	// (OUTPOST_ADMIN_API_KEY), which its API does not list with the issued
	// keys: the console shows it.
	BootstrapKey bool
	Now          func() time.Time
}

// Pages serves the pages.
type Pages struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	pages map[string]*template.Template
	icons *iconProxy

	banlist, faucet, mintdir apiClient
}

// Paths the pages own outright; no service may be mounted on them.
const (
	staticPath = "/static/"
	qrPath     = "/qr"
)

// Overlaps reports whether a service mounted at mount would take a path the
// pages own.
func Overlaps(mount string) bool {
	for _, own := range []string{strings.TrimSuffix(staticPath, "/"), qrPath} {
		if strings.HasPrefix(own+"/", mount+"/") || strings.HasPrefix(mount+"/", own+"/") {
			return true
		}
	}
	return false
}

// New checks the mounts and parses the templates.
func New(cfg Config) (*Pages, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	for _, s := range []Service{cfg.Banlist, cfg.Faucet, cfg.Mintdir} {
		if s.API == nil {
			continue
		}
		if s.Mount == "" || s.Mount == "/" || !strings.HasPrefix(s.Mount, "/") || strings.HasSuffix(s.Mount, "/") {
			return nil, fmt.Errorf("pages: mount path %q must start with / and not end with one", s.Mount)
		}
		if Overlaps(s.Mount) {
			return nil, fmt.Errorf("pages: mount path %s takes paths the pages use (/static/, /qr)", s.Mount)
		}
	}
	p := &Pages{cfg: cfg, log: cfg.Log, now: cfg.Now,
		banlist: apiClient{cfg.Banlist.API}, faucet: apiClient{cfg.Faucet.API}, mintdir: apiClient{cfg.Mintdir.API}}
	var err error
	if p.pages, err = parseTemplates(p.funcs()); err != nil {
		return nil, err
	}
	p.icons = newIconProxy(probe.NewClient(probe.ClientOptions{
		Timeout: iconTimeout, MaxBodyBytes: maxIconBytes, AllowPrivate: cfg.AllowPrivateIcons,
	}), p.now)
	return p, nil
}
