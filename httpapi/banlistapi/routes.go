// Package banlistapi serves the ban-list REST interface (seed: banlist.md).
package banlistapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/ratelimit"
	"github.com/outpost-relay/outpost/settings"
)

// Settings are the ban-list API's operator settings, each bound by
// cmd/outpost to the flag its tag names and that flag's OUTPOST_*
// environment twin.
type Settings struct {
	ReportsPublic bool `flag:"reports-public" usage:"serve GET /banlist/reports without an API key"`
	ReportsPerMin int  `flag:"reports-rate-limit" usage:"POST /banlist/reports per minute per client IP; 0 disables"`
}

// DefaultSettings are the design's defaults.
func DefaultSettings() Settings { return Settings{ReportsPerMin: 10} }

// Valid checks the settings, naming a bad one.
func (s *Settings) Valid() error {
	if s.ReportsPerMin < 0 {
		return settings.Errorf("reports-rate-limit", "must be 0 or more")
	}
	return nil
}

// Config configures the ban-list API.
type Config struct {
	Settings
	Service *banlist.Service
	Log     *slog.Logger
	Now     func() time.Time
}

// Routes returns the ban-list router; every route of the service is here.
func Routes(cfg Config) http.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	svc := cfg.Service
	auth := func(role banlist.Role) func(http.Handler) http.Handler { return requireRole(svc, role) }
	reportLimit := httpapi.RateLimit(ratelimit.New(cfg.ReportsPerMin, time.Minute, cfg.Now))
	readReports := auth(banlist.RoleViewer)
	if cfg.ReportsPublic {
		readReports = func(next http.Handler) http.Handler { return next }
	}

	r := chi.NewRouter()
	r.Use(httpapi.Logger(cfg.Log))
	r.NotFound(httpapi.NotFound)
	r.MethodNotAllowed(httpapi.MethodNotAllowed)

	r.Group(func(r chi.Router) {
		r.Use(httpapi.CORS)
		r.Get("/health", httpapi.ServeHealth(svc.Health))
		r.Get("/openapi.json", httpapi.ServeJSON(openAPI))
		r.Get("/blocked/pubkeys", handleBlockedList(svc, cfg.Now))
		r.Get("/blocked/pubkeys/{pubkey}", handleBlockedStatus(svc))
		r.Get("/blocked/words", handleBlockedWords(svc, cfg.Now))
		r.With(reportLimit).Post("/reports", handleReport(svc))
		r.With(readReports).Get("/reports", handleReports(svc))
	})

	r.Route("/admin", func(r chi.Router) {
		r.With(auth(banlist.RoleModerator)).Post("/ban", handleBan(svc))
		r.With(auth(banlist.RoleModerator)).Post("/temp-ban", handleTempBan(svc))
		r.With(auth(banlist.RoleModerator)).Post("/unban", handleUnban(svc))
		r.With(auth(banlist.RoleViewer)).Get("/bans", handleBans(svc, cfg.Now))
		r.With(auth(banlist.RoleViewer)).Get("/words", handleWords(svc))
		r.With(auth(banlist.RoleModerator)).Post("/words", handleAddWord(svc))
		r.With(auth(banlist.RoleModerator)).Delete("/words/{word}", handleRemoveWord(svc))
		r.With(auth(banlist.RoleAdmin)).Get("/keys", handleKeys(svc))
		r.With(auth(banlist.RoleAdmin)).Post("/keys", handleCreateKey(svc))
		r.With(auth(banlist.RoleAdmin)).Delete("/keys/{key}", handleRevokeKey(svc))
		r.With(auth(banlist.RoleAdmin)).Get("/audit", handleAudit(svc))
	})
	return r
}
