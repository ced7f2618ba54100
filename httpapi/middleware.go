package httpapi

import (
	"net/http"
	"runtime/debug"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/ratelimit"
	"github.com/rs/cors"
)

// ClientIPMiddleware records the client IP: the socket peer, or the first
// untrusted X-Forwarded-For hop when the peer is one of trustedProxies (CIDRs).
func ClientIPMiddleware(trustedProxies []string) func(http.Handler) http.Handler {
	if len(trustedProxies) == 0 {
		return middleware.ClientIPFromRemoteAddr
	}
	return middleware.ClientIPFromXFF(trustedProxies...)
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
				return outpost.Errorf(outpost.Forbidden, "ip_blocked", "your address is blocked by this server")
			}
			next.ServeHTTP(w, r)
			return nil
		})
	}
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
	Encode(w, http.StatusNotFound, ErrorBody{Error: "not_found", Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
}

func MethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	Encode(w, http.StatusMethodNotAllowed, ErrorBody{Error: "method_not_allowed", Message: r.Method + " is not allowed on " + r.URL.Path})
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
