package httpapi

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
)

// Service is one REST service mounted on the root handler.
type Service struct {
	Name   string                                        // "banlist"
	Mount  string                                        // "/banlist"
	Routes http.Handler                                  // its router, with paths relative to Mount; nil: a part of /health only
	Health func(ctx context.Context) outpost.Health[any] // see ReportHealth
	// PassBlocked tells requests under Mount that a blocked client IP
	// must not stop: an admin undoing a block. nil: none.
	PassBlocked func(r *http.Request) bool
}

// Config wires the root handler.
type Config struct {
	Relay          http.Handler // the Nostr relay at "/"
	Services       []Service
	TrustedProxies []string
	RateLimit      *ratelimit.Limiter   // per client IP over every service route; nil: none
	BlockedIP      func(ip string) bool // client IPs refused everything (403); nil: none
	// PassBlocked tells requests outside the services' mounts (the
	// relay's NIP-86) that a blocked client IP must not stop; nil: none.
	// GET /health and <mount>/health from loopback always pass.
	PassBlocked func(r *http.Request) bool
	Log         *slog.Logger
	Index       any // body of GET / for plain HTTP clients
	// Observe, when set, wraps each service's routes (and /health) outermost,
	// so it sees every answer, the rate limit's 429s included: metrics and
	// the access log.
	Observe func(service, mount string) func(http.Handler) http.Handler
	Metrics http.Handler // GET /metrics on this listener; nil: not here
}

// New returns the handler that serves everything on one listener.
func New(cfg Config) http.Handler {
	observe := cfg.Observe
	if observe == nil {
		observe = func(string, string) func(http.Handler) http.Handler { return passThrough }
	}
	r := chi.NewRouter()
	r.Use(Logger(cfg.Log), ClientIPMiddleware(cfg.TrustedProxies), rootRefusals(cfg.BlockedIP, passBlocked(cfg), byMount(cfg.Services, observe)), Recover, HeadAsGet)
	// The root's own 404s (a scanner's /wp-login.php) and 405s (POST
	// /health) are observed as the root's. A service's path gets here only
	// if its router has no handler of its own and inherits these; its
	// service observes it then.
	r.NotFound(observedAtRoot(cfg.Services, observe, NotFound))
	r.MethodNotAllowed(observedAtRoot(cfg.Services, observe, MethodNotAllowed))

	r.With(observe("outpost", ""), CORS, ValidQuery).Get("/health", health(cfg.Services))
	if cfg.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", cfg.Metrics)
	}
	for _, s := range cfg.Services {
		if s.Routes != nil { // nil: a part of /health only (storage, upstream)
			r.With(observe(s.Name, s.Mount), RateLimit(cfg.RateLimit), ValidQuery).Mount(s.Mount, s.Routes)
		}
	}
	r.Handle("/", relayOrIndex(cfg.Relay, cfg.Index))
	return r
}

func passThrough(next http.Handler) http.Handler { return next }

// observedAtRoot is h, observed as the root's answer unless the path is
// under a service's mount.
func observedAtRoot(services []Service, observe func(service, mount string) func(http.Handler) http.Handler, h http.HandlerFunc) http.HandlerFunc {
	root := observe("outpost", "")(h)
	return func(w http.ResponseWriter, r *http.Request) {
		if mountOf(services, r) != "" {
			h(w, r)
			return
		}
		root.ServeHTTP(w, r)
	}
}

// byMount wraps a handler in observe of the service whose mount the
// request's path is under, or of "outpost" (the root: /health, the relay,
// the rest).
func byMount(services []Service, observe func(service, mount string) func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		observed := map[string]http.Handler{"": observe("outpost", "")(h)}
		for _, s := range services {
			if s.Routes != nil {
				observed[s.Mount] = observe(s.Name, s.Mount)(h)
			}
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { observed[mountOf(services, r)].ServeHTTP(w, r) })
	}
}

// mountOf is the mount of the service (with routes) r's path is under, or "".
func mountOf(services []Service, r *http.Request) string {
	for _, s := range services {
		if s.Routes != nil && (r.URL.Path == s.Mount || strings.HasPrefix(r.URL.Path, s.Mount+"/")) {
			return s.Mount
		}
	}
	return ""
}

// relayOrIndex hands websocket, NIP-11 and NIP-86 requests to the relay and
// answers a plain GET / with a short description of the services.
func relayOrIndex(relay http.Handler, index any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain := r.Header.Get("Upgrade") == "" && r.Header.Get("Accept") != "application/nostr+json" &&
			r.Header.Get("Content-Type") != "application/nostr+json+rpc"
		if plain && (r.Method == http.MethodGet || r.Method == http.MethodHead) && index != nil {
			Encode(w, http.StatusOK, index)
			return
		}
		relay.ServeHTTP(w, r)
	})
}

// Limits of the one HTTP server that serves the relay and the services.
const (
	// MaxHeaderBytes caps a request's header block; net/http answers 431
	// beyond it (in plain text: it does so before any handler runs).
	MaxHeaderBytes = 64 << 10
	// ReadHeaderTimeout bounds the request line and headers.
	ReadHeaderTimeout = 10 * time.Second
	// BodyTimeout bounds the arrival of a declared request body (408 when
	// it is exceeded). A JSON body is at most MaxBodyBytes.
	BodyTimeout = 30 * time.Second
	// IdleTimeout closes keep-alive connections nobody uses.
	IdleTimeout = 2 * time.Minute
)

// ServerLimits overrides the limits above (tests make them short); zero
// fields keep them.
type ServerLimits struct {
	ReadHeaderTimeout, BodyTimeout, IdleTimeout time.Duration
}

// NewServer returns the HTTP server for h with outpost's limits.
//
// It sets no ReadTimeout or WriteTimeout: both run from the start of a
// request to the end of its handler, so they would bound how long a
// handler may work (a faucet payout waits for the mint), and once a body
// is read net/http cancels the request's context when ReadTimeout passes.
// The body gets its own deadline instead (see bodyDeadline). Websockets
// are hijacked and clear their deadlines, so none of these limits cut them.
func NewServer(h http.Handler, lim ServerLimits) *http.Server {
	return &http.Server{
		Handler:           bodyDeadline(cmp.Or(lim.BodyTimeout, BodyTimeout), h),
		ReadHeaderTimeout: cmp.Or(lim.ReadHeaderTimeout, ReadHeaderTimeout),
		IdleTimeout:       cmp.Or(lim.IdleTimeout, IdleTimeout),
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// bodyDeadline gives a request that declares a body (a Content-Length, or
// chunked) timeout to send all of it, whether or not its handler reads it:
// otherwise a body that never comes holds the connection, and net/http
// waits for it after the handler to keep the connection alive. The
// deadline is lifted as soon as the body has been read to its end.
func bodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
