package httpapi

import (
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/rs/cors"
)

// ClientIPMiddleware records the client IP: the socket peer, or the first
// untrusted X-Forwarded-For hop when the peer is one of trustedProxies (CIDRs).
// A trusted peer whose header names no untrusted hop (none, only trusted
// ones, or one that is not an address) is the client itself: chi's
// ClientIPFromXFF would record nothing, and every such request would share
// the empty address's rate-limit bucket.
func ClientIPMiddleware(trustedProxies []string) func(http.Handler) http.Handler {
	if len(trustedProxies) == 0 {
		return middleware.ClientIPFromRemoteAddr
	}
	fromXFF := middleware.ClientIPFromXFF(trustedProxies...)
	return func(next http.Handler) http.Handler {
		return middleware.ClientIPFromRemoteAddr(fromXFF(next)) // the header's hop, when found, wins
	}
}

// ClientIP is the client IP recorded by ClientIPMiddleware ("" if unknown).
func ClientIP(r *http.Request) string { return middleware.GetClientIP(r.Context()) }

// BlockIPs refuses every request whose client IP (see ClientIPMiddleware)
// blocked reports, with 403 ip_blocked. blocked nil: none is.
func BlockIPs(blocked func(ip string) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if blocked == nil {
			return next
		}
		return Handle(func(w http.ResponseWriter, r *http.Request) error {
			if blocked(ClientIP(r)) {
				return errIPBlocked
			}
			next.ServeHTTP(w, r)
			return nil
		})
	}
}

var errIPBlocked = outpost.Errorf(outpost.Forbidden, "ip_blocked", "your address is blocked by this server")

// chiMethods are the methods chi's router knows (its default method map;
// outpost never calls chi.RegisterMethod). chi answers any other with 405
// before a route, or a route's middleware, is matched.
var chiMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}

// rootRefusals answers at the root what reaches no service: a blocked
// client IP (403 ip_blocked, everywhere: services, relay, /health) and a
// method chi does not know (405, as chi would). Its answers go through
// observed, which counts them as the answers of the service whose mount
// the path is under, like every answer a service gives.
func rootRefusals(blocked func(ip string) bool, pass func(*http.Request) bool, observed func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	refuseIP := observed(Handle(func(http.ResponseWriter, *http.Request) error { return errIPBlocked }))
	refuseMethod := observed(http.HandlerFunc(MethodNotAllowed))
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case blocked != nil && blocked(ClientIP(r)) && !pass(r):
				refuseIP.ServeHTTP(w, r)
			case !slices.Contains(chiMethods, r.Method):
				refuseMethod.ServeHTTP(w, r)
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}

// passBlocked tells the requests an address block never stops, so no block
// can lock out the operator's health checks or the admins who undo it:
// /health and the services' /health from loopback, and what the services
// and cfg.PassBlocked let through.
func passBlocked(cfg Config) func(*http.Request) bool {
	return func(r *http.Request) bool {
		mount := mountOf(cfg.Services, r)
		if (r.URL.Path == "/health" || r.URL.Path == mount+"/health") && loopback(ClientIP(r)) {
			return true
		}
		for _, s := range cfg.Services {
			if s.Mount == mount && s.PassBlocked != nil {
				return mount != "" && s.PassBlocked(r)
			}
		}
		return mount == "" && cfg.PassBlocked != nil && cfg.PassBlocked(r)
	}
}

func loopback(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Unmap().IsLoopback()
}

// RateLimit refuses requests beyond l's limit per client IP with a JSON 429.
func RateLimit(l *ratelimit.Limiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return Handle(func(w http.ResponseWriter, r *http.Request) error {
			if err := Allow(l, ClientIP(r)); err != nil {
				return err
			}
			next.ServeHTTP(w, r)
			return nil
		})
	}
}

// Allow takes one request of key from l, or returns the 429 error.
func Allow(l *ratelimit.Limiter, key string) error {
	if ok, wait := l.Allow(key); !ok {
		e := outpost.Errorf(outpost.RateLimited, "rate_limit_exceeded", "too many requests; retry in %.0f seconds", max(1, wait.Seconds()))
		e.RetryAfter = wait
		return e
	}
	return nil
}

// Recover turns a panic in a handler into a logged 500 with the JSON body.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				LoggerFromContext(r.Context()).Error("panic in handler", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				Error(w, r, outpost.Errorf(outpost.Internal, "internal_error", "panic"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// NotFound and MethodNotAllowed answer unknown routes with the JSON body.
func NotFound(w http.ResponseWriter, r *http.Request) {
	Encode(w, http.StatusNotFound, ErrorBody{Error: "not_found", Message: "no such endpoint: " + r.Method + " " + outpost.Echo(r.URL.Path)})
}

// MethodNotAllowed also sends the Allow header RFC 9110 requires with a 405.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	allow := strings.Join(allowedMethods(r), ", ")
	w.Header().Set("Allow", allow)
	Encode(w, http.StatusMethodNotAllowed, ErrorBody{Error: "method_not_allowed",
		Message: r.Method + " is not allowed on " + outpost.Echo(r.URL.Path) + "; allowed: " + allow})
}

// allowedMethods asks the router which methods the request's path has.
// chi knows, but does not tell a custom 405 handler. The route context's
// Routes is the outermost router, which finds the path through mounts.
func allowedMethods(r *http.Request) []string {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil || rctx.Routes == nil {
		return nil
	}
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if rctx.Routes.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead) // see HeadAsGet
			}
		}
	}
	return allow
}

// HeadAsGet routes a HEAD request as a GET (uptime monitors and curl -I use
// HEAD); net/http sends the headers, Content-Length included, and drops the
// body. It belongs to the outermost router: chi keeps the method it routes
// by through mounts.
func HeadAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rctx := chi.RouteContext(r.Context()); rctx != nil && r.Method == http.MethodHead {
			rctx.RouteMethod = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// ValidQuery refuses a query string with a malformed escape or a ';'
// separator with invalid_query: r.URL.Query would drop such pairs silently,
// and net/http leaves the query to the handler.
func ValidQuery(next http.Handler) http.Handler {
	return Handle(func(w http.ResponseWriter, r *http.Request) error {
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			return outpost.Errorf(outpost.Invalid, "invalid_query", "the query string is malformed: use name=value pairs joined by &, with %%XX escapes")
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// CORS lets browser frontends call public endpoints from any origin. Admin
// routes are left without it: they are not meant for browsers.
var CORS = cors.New(cors.Options{
	AllowedOrigins: []string{"*"},
	AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete},
	AllowedHeaders: []string{"Authorization", "Content-Type", "If-None-Match"},
	ExposedHeaders: []string{"ETag", "Retry-After"},
	MaxAge:         86400,
}).Handler
