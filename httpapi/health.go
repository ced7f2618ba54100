package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/outpost-relay/outpost"
)

// ReportHealth makes a service's Health method (computed by the service
// itself, without outbound calls) the Health of its Service.
func ReportHealth[C any](health func(context.Context) outpost.Health[C]) func(context.Context) outpost.Health[any] {
	return func(ctx context.Context) outpost.Health[any] { return health(ctx).Any() }
}

// ServeHealth answers a service's own /health with its report: 503 when it
// is down, 200 otherwise.
func ServeHealth[C any](health func(context.Context) outpost.Health[C]) http.HandlerFunc {
	return Handle(func(w http.ResponseWriter, r *http.Request) error {
		h := health(r.Context())
		return Encode(w, healthCode(h.Status), h)
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

// RootHealth is the root /health: each service's body is one of its checks,
// and the worst status of them is its own.
type RootHealth = outpost.Health[map[string]outpost.Health[any]]

func health(services []Service) http.HandlerFunc {
	return Handle(func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		body := outpost.NewHealth(outpost.Version, map[string]outpost.Health[any]{})
		for _, s := range services {
			if s.Health == nil {
				continue
			}
			h := s.Health(ctx)
			body.Checks[s.Name] = h
			if h.Status != outpost.HealthOK {
				why := s.Name + " is " + h.Status
				if h.Reason != "" {
					why += ": " + h.Reason
				}
				body.Fail(h.Status, why)
			}
		}
		return Encode(w, healthCode(body.Status), body)
	})
}
