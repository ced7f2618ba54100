package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/ratelimit"
)

// Service is one REST service mounted on the root handler.
type Service struct {
	Name   string       // "banlist"
	Mount  string       // "/banlist"
	Routes http.Handler // its router, with paths relative to Mount
	// Health reports "ok", "degraded" (working, with a part impaired) or
	// "down", and details; it makes no outbound calls.
	Health func(ctx context.Context) (status string, details any)
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
	r.Use(ClientIPMiddleware(cfg.TrustedProxies), Recover(cfg.Log))
	r.NotFound(NotFound)
	r.MethodNotAllowed(MethodNotAllowed)

	r.With(CORS).Get("/health", health(cfg.Services))
	for _, s := range cfg.Services {
		r.With(RateLimit(cfg.RateLimit, cfg.Log)).Mount(s.Mount, s.Routes)
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

// HealthBody is the root /health answer.
type HealthBody struct {
	Status   string                   `json:"status"`
	Version  string                   `json:"version"`
	Time     string                   `json:"time"`
	Services map[string]ServiceHealth `json:"services"`
}

// ServiceHealth is one service's part of /health.
type ServiceHealth struct {
	Status  string `json:"status"`
	Details any    `json:"details"`
}

func health(services []Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		body := HealthBody{Status: "ok", Version: outpost.Version, Time: time.Now().UTC().Format(time.RFC3339), Services: map[string]ServiceHealth{}}
		for _, s := range services {
			if s.Health == nil {
				continue
			}
			st, d := s.Health(ctx)
			body.Services[s.Name] = ServiceHealth{Status: st, Details: d}
			switch {
			case st == "down":
				body.Status = "down"
			case st != "ok" && body.Status == "ok":
				body.Status = "degraded"
			}
		}
		// A degraded service (say, the faucet's mint is unreachable) must not
		// take the relay and the other services out of a load balancer.
		status := http.StatusOK
		if body.Status == "down" {
			status = http.StatusServiceUnavailable
		}
		Encode(w, status, body)
	}
}
