package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

//go:embed templates
var templateFS embed.FS

// CSP is the Content-Security-Policy of every page: scripts, styles and
// images only from this origin (QR codes also from blob: URLs the page's own
// script makes), no inline script or style, no string-to-DOM sinks (Trusted
// Types), no framing, forms and fetches only to this origin.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()")
}

// view is what the layout needs from every page.
type view struct {
	Title   string
	Section string // the current item of the navigation: home, faucet, mintdir, banlist
	Nav     nav
	Script  string // the page's own module under /static, if any
	Main    any    // the page's data
}

// nav holds the page URLs; "" for a service that is not served.
type nav struct{ Faucet, Mintdir, Banlist string }

func (p *Pages) nav() nav {
	var n nav
	if p.faucet.ok() {
		n.Faucet = p.cfg.Faucet.Mount + "/"
	}
	if p.mintdir.ok() {
		n.Mintdir = p.cfg.Mintdir.Mount + "/"
	}
	if p.banlist.ok() {
		n.Banlist = p.cfg.Banlist.Mount + "/"
	}
	return n
}

// parseTemplates parses each page together with the layout.
func parseTemplates(funcs template.FuncMap) (map[string]*template.Template, error) {
	entries, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, e := range entries {
		name := e.Name()
		if name == "layout.html" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("pages: template %s: %w", name, err)
		}
		pages[strings.TrimSuffix(name, ".html")] = t
	}
	return pages, nil
}

// render writes a page. It is rendered into a buffer first, so a template
// error is a clean 500 rather than half a page.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	v.Nav = p.nav()
	var buf bytes.Buffer
	if err := p.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		p.log.ErrorContext(r.Context(), "page template failed", "page", page, "err", err)
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString("<!doctype html><title>Error</title><p>This page could not be shown.</p>\n")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// errorView is the data of the error page.
type errorView struct {
	Status  int
	Heading string
	Message string
	Code    string
}

// fail renders err as an error page: a service's error with its status and
// message, anything else as a logged 500 that says nothing of the cause.
func (p *Pages) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	ev := errorView{Status: http.StatusInternalServerError, Heading: "Something went wrong",
		Message: "The server could not show this page. Try again in a moment.", Code: "internal_error"}
	if errors.As(err, &ae) && ae.Body.Error != "internal_error" {
		ev = errorView{Status: ae.Status, Heading: headingFor(ae.Status), Message: ae.Body.Message, Code: ae.Body.Error}
		if ae.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
		}
	} else {
		p.log.ErrorContext(r.Context(), "page failed", "path", r.URL.Path, "err", err)
	}
	p.render(w, r, ev.Status, "error", view{Title: ev.Heading, Main: ev})
}

func headingFor(status int) string {
	switch status {
	case http.StatusNotFound:
		return "Not found"
	case http.StatusTooManyRequests:
		return "Too many requests"
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "That did not work"
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return "Unavailable right now"
	}
	return "Something went wrong"
}

// page wraps a page handler: security headers, the rate limit, and a panic
// turned into an error page.
func (p *Pages) page(h http.HandlerFunc) http.HandlerFunc {
	return p.limited(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		h(w, r)
	})
}

// limited applies the program-wide rate limit per client IP and recovers
// from panics.
func (p *Pages) limited(h http.HandlerFunc) http.HandlerFunc {
	return p.recovered(func(w http.ResponseWriter, r *http.Request) {
		if p.cfg.RateLimit != nil {
			if err := httpapi.Allow(p.cfg.RateLimit, httpapi.ClientIP(r)); err != nil {
				e := outpost.AsError(err)
				securityHeaders(w.Header())
				p.fail(w, r, &apiError{Status: http.StatusTooManyRequests, Body: httpapi.ErrorBody{Error: e.Code, Message: e.Message},
					RetryAfter: int(math.Ceil(e.RetryAfter.Seconds()))})
				return
			}
		}
		h(w, r)
	})
}

// recovered turns a panic into a logged 500 page.
func (p *Pages) recovered(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				p.log.Error("panic in page", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				p.fail(w, r, errors.New("panic"))
			}
		}()
		h(w, r)
	}
}

// --- template functions ---

func (p *Pages) funcs() template.FuncMap {
	return template.FuncMap{
		"asset":  assetURL,
		"utc":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"ago":    func(t time.Time) string { return ago(p.now().Sub(t)) },
		"unix":   func(s int64) time.Time { return time.Unix(s, 0) },
		"pct":    pct,
		"ms":     ms,
		"dur":    func(sec int64) string { return duration(time.Duration(sec) * time.Second) },
		"short":  shortKey,
		"npub":   pubkey.NPub,
		"sats":   sats,
		"deref":  derefStr,
		"label":  label,
		"mul100": func(v float64) float64 { return v * 100 },
		"webURL": webURL,
		"count":  count,
		"int64":  func(n int) int64 { return int64(n) },
		"fields": fields,
	}
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64) + "%"
}

// ms writes a response time; a mint on the same network answers within the
// millisecond the API rounds to, which "0 ms" would misstate.
func ms(v *int) string {
	switch {
	case v == nil:
		return "–"
	case *v < 1:
		return "under 1 ms"
	}
	return strconv.Itoa(*v) + " ms"
}

// sats writes 12345 as "12,345 sats".
func sats(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	if v == 1 {
		return s + " sat"
	}
	return s + " sats"
}

// duration writes a duration the way people say it: "2 h 5 min", "45 s".
func duration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d days", int(d.Hours())/24)
}

func ago(d time.Duration) string {
	if d < 5*time.Second {
		return "just now"
	}
	return duration(d) + " ago"
}

// shortKey abbreviates a long key or id for display: npub1abcd…wxyz.
func shortKey(s string) string {
	if len(s) <= 20 {
		return s
	}
	return s[:10] + "…" + s[len(s)-6:]
}

// count writes n things: "1 claim", "3 claims".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.FormatInt(n, 10) + " " + thing + "s"
}

// webURL reports whether a mint-given link may be a link: http(s) only
// (html/template would defuse javascript: anyway; this keeps others as text).
func webURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// label turns an API word into words: "very_low" → "very low".
func label(s string) string { return strings.ReplaceAll(s, "_", " ") }
