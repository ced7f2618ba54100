package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/httpapi"
)

// Handler serves the pages in front of next (the relay and the REST
// services); every request that is not for a page goes to next untouched.
// Every page route is here. Blocked client IPs are refused here only what
// the pages serve: next refuses them the rest itself, so that the REST
// services' metrics and access log count those refusals too.
func (p *Pages) Handler(next http.Handler) http.Handler {
	pass := passTo(next)
	block := httpapi.BlockIPs(p.cfg.BlockedIP)
	own := func(h http.HandlerFunc) http.HandlerFunc { return block(h).ServeHTTP }
	browsers := func(h http.HandlerFunc) http.HandlerFunc { return forBrowsers(own(p.page(h)), pass) }

	r := chi.NewRouter()
	r.Use(httpapi.ClientIPMiddleware(p.cfg.TrustedProxies))
	r.NotFound(pass)
	r.MethodNotAllowed(pass)

	r.Get("/", browsers(p.handleLanding(next)))
	r.Get(staticPath+"{file}", own(handleAsset))
	r.Post(qrPath, own(p.page(handleQR)))

	if m := p.cfg.Faucet.Mount; p.faucet.ok() {
		r.Get(m, forBrowsers(own(redirect(m+"/")), pass))
		r.Get(m+"/", browsers(p.handleFaucet))
	}
	if m := p.cfg.Mintdir.Mount; p.mintdir.ok() {
		r.Get(m, forBrowsers(own(redirect(m+"/")), pass))
		r.Get(m+"/", browsers(p.handleDirectory))
		r.Post(m+"/", forForms(own(p.page(p.handleSubmit)), pass))
		r.Get(m+"/mint/{id}", own(p.page(p.handleMint)))
		// Icons are images of a page already counted, and mostly come from
		// the cache: a list of fifty mints must not spend fifty requests.
		r.Get(m+"/mint/{id}/icon", own(p.recovered(p.handleIcon)))
	}
	if m := p.cfg.Banlist.Mount; p.banlist.ok() {
		r.Get(m, forBrowsers(own(redirect(m+"/")), pass))
		r.Get(m+"/", browsers(p.handleConsole))
	}
	return r
}

// wantsHTML tells a browser navigating to a page from an API client, a
// websocket upgrade or a NIP-11 request: only browsers ask for text/html.
func wantsHTML(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return r.Header.Get("Upgrade") == "" && !strings.Contains(accept, "application/nostr+json") &&
		strings.Contains(accept, "text/html")
}

// forBrowsers serves h to browsers and everyone else from pass; both
// answers vary by Accept, so caches must keep them apart.
func forBrowsers(h, pass http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept")
		if wantsHTML(r) {
			h(w, r)
			return
		}
		pass(w, r)
	}
}

// forForms serves h to HTML form posts and everything else from pass.
func forForms(h, pass http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			h(w, r)
			return
		}
		pass(w, r)
	}
}

// passTo hands a request to next without this router's state: chi reuses a
// routing context it finds in the request, and next must route afresh.
func passTo(next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, nil)))
	}
}

func redirect(to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			to += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, to, http.StatusFound)
	}
}
