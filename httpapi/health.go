package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/outpost-relay/outpost"
)

// A HealthReport is the body of a service's /health, computed by the
// service itself (its Health method) without outbound calls.
type HealthReport interface {
	HealthStatus() string // outpost.HealthOK, outpost.HealthDegraded or outpost.HealthDown
}

// ReportHealth makes a service's Health method the Health of its Service.
func ReportHealth[H HealthReport](health func(context.Context) H) func(context.Context) HealthReport {
	return func(ctx context.Context) HealthReport { return health(ctx) }
}

// ServeHealth answers a service's own /health with its report: 503 when it
// is down, 200 otherwise.
func ServeHealth[H HealthReport](health func(context.Context) H) http.HandlerFunc {
	return Handle(func(w http.ResponseWriter, r *http.Request) error {
		h := health(r.Context())
		return Encode(w, healthCode(h.HealthStatus()), h)
	})
}

// A degraded service (say, the faucet's mint is unreachable) must not take
// the relay and the other services out of a load balancer.
func healthCode(status string) int {
	if status == outpost.HealthDown {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// HealthBody is the root /health answer.
type HealthBody struct {
	Status   string                   `json:"status"`
	Version  string                   `json:"version"`
	Time     string                   `json:"time"`
	Services map[string]ServiceHealth `json:"services"`
}

// ServiceHealth is one service's part of /health: its status, and as
// details the body of its own /health.
type ServiceHealth struct {
	Status  string       `json:"status"`
	Details HealthReport `json:"details"`
}

func health(services []Service) http.HandlerFunc {
	return Handle(func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		body := HealthBody{Status: outpost.HealthOK, Version: outpost.Version, Time: time.Now().UTC().Format(time.RFC3339), Services: map[string]ServiceHealth{}}
		for _, s := range services {
			if s.Health == nil {
				continue
			}
			h := s.Health(ctx)
			st := h.HealthStatus()
			body.Services[s.Name] = ServiceHealth{Status: st, Details: h}
			switch {
			case st == outpost.HealthDown:
				body.Status = outpost.HealthDown
			case st != outpost.HealthOK && body.Status == outpost.HealthOK:
				body.Status = outpost.HealthDegraded
			}
		}
		return Encode(w, healthCode(body.Status), body)
	})
}
