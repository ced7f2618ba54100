package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/ratelimit"
)

// Service is one REST service mounted on the root handler.
type Service struct {
	Name   string                                 // "banlist"
	Mount  string                                 // "/banlist"
	Routes http.Handler                           // its router, with paths relative to Mount; nil: a part of /health only
	Health func(ctx context.Context) HealthReport // see ReportHealth
}

// Config wires the root handler.
type Config struct {
	Relay          http.Handler // the Nostr relay at "/"
	Services       []Service
	TrustedProxies []string
	RateLimit      *ratelimit.Limiter // per client IP over every service route; nil: none
	Log            *slog.Logger
	Index          any // body of GET / for plain HTTP clients
}

// New returns the handler that serves everything on one listener.
func New(cfg Config) http.Handler {
	r := chi.NewRouter()
	r.Use(Logger(cfg.Log), ClientIPMiddleware(cfg.TrustedProxies), Recover)
	r.NotFound(NotFound)
	r.MethodNotAllowed(MethodNotAllowed)

	r.With(CORS).Get("/health", health(cfg.Services))
	for _, s := range cfg.Services {
		if s.Routes != nil {
			r.With(RateLimit(cfg.RateLimit)).Mount(s.Mount, s.Routes)
		}
	}
	r.Handle("/", relayOrIndex(cfg.Relay, cfg.Index))
	return r
}

// relayOrIndex hands websocket, NIP-11 and NIP-86 requests to the relay and
// answers a plain GET / with a short description of the services.
func relayOrIndex(relay http.Handler, index any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain := r.Header.Get("Upgrade") == "" && r.Header.Get("Accept") != "application/nostr+json" &&
			r.Header.Get("Content-Type") != "application/nostr+json+rpc"
		if plain && r.Method == http.MethodGet && index != nil {
			Encode(w, http.StatusOK, index)
			return
		}
		relay.ServeHTTP(w, r)
	})
}
