// Package mintdirapi serves the mint directory's REST interface
// (docs/mintdir.md).
package mintdirapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/mintdir"
)

// Settings are the directory API's operator settings, each bound by
// cmd/outpost to the flag its tag names and that flag's OUTPOST_*
// environment twin.
type Settings struct {
	SubmitPerHour int `flag:"mintdir-submit-rate-limit" usage:"POST /mintdir/mints/submit per hour per client IP; 0 disables"`
}

// DefaultSettings are the defaults docs/configuration.md lists.
func DefaultSettings() Settings { return Settings{SubmitPerHour: 10} }

// Valid checks the settings, naming a bad one.
func (s *Settings) Valid() error {
	if s.SubmitPerHour < 0 {
		return settings.Errorf("mintdir-submit-rate-limit", "must be 0 or more")
	}
	return nil
}

// Config configures the mint-directory API.
type Config struct {
	Settings
	Directory *mintdir.Directory
	Audits    Audits                          // nil when --audit is off
	Admin     func(http.Handler) http.Handler // admits the ban list's admin keys (the audit wallet's routes)
	Log       *slog.Logger
	// Follows reports whether viewer's contact list follows author (hex
	// keys; the web of trust's Follows), for ?viewer=; nil: no one follows.
	Follows func(viewer, author string) bool
	Now     func() time.Time
}

// mintEndpoints are the seed's per-mint resources; each is served by id
// (/mints/{mint_id}<path>) and by URL (/mints/by-url<path>?url=).
func mintEndpoints(cfg Config) []struct {
	path string
	fn   mintHandler
} {
	d := cfg.Directory
	return []struct {
		path string
		fn   mintHandler
	}{
		{"", handleCore(d)},
		{"/urls", handleURLs()},
		{"/metadata", handleMetadata(d)},
		{"/metadata/history", handleHistory(d)},
		{"/status", handleStatus(d)},
		{"/uptime", handleUptime(d)},
		{"/uptime/timeseries", handleTimeseries(d)},
		{"/incidents", handleIncidents(d, cfg.Now)},
		{"/trust", handleTrust()},
		{"/reviews", handleReviews(d, cfg.Follows)},
		{"/views", handleViews(d)},
		{"/features", handleFeatures()},
		{"/audits", handleAudits(cfg.Audits)},
	}
}

// Routes returns the mint-directory router; every route of the service is
// here. Each path is also served under /v1, the seed's earlier form.
func Routes(cfg Config) http.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := cfg.Directory
	submitLimit := httpapi.RateLimit(ratelimit.New(cfg.SubmitPerHour, time.Hour, cfg.Now))

	service := func(r chi.Router) {
		r.Get("/health", httpapi.ServeHealth(d.Health))
		r.Get("/stats", handleStats(d))
		r.Get("/mints", handleList(d))
		r.With(submitLimit).Post("/mints/submit", handleSubmit(d))
		for _, ep := range mintEndpoints(cfg) {
			r.Get("/mints/{mint_id}"+ep.path, byID(d, ep.fn))
			r.Get("/mints/by-url"+ep.path, byURL(d, ep.fn))
		}
		auditRoutes(r, cfg.Audits, cfg.Admin)
	}

	r := chi.NewRouter()
	r.Use(httpapi.Logger(cfg.Log))
	r.NotFound(httpapi.NotFound)
	r.MethodNotAllowed(httpapi.MethodNotAllowed)
	r.Use(httpapi.CORS)
	r.Get("/openapi.json", httpapi.ServeJSON(openAPI))
	service(r)
	r.Route("/v1", func(r chi.Router) {
		r.NotFound(httpapi.NotFound)
		r.MethodNotAllowed(httpapi.MethodNotAllowed)
		service(r)
	})
	return r
}
