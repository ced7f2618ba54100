// Package banlistapi serves the ban-list REST interface (docs/banlist.md).
package banlistapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/wot"
)

// Settings are the ban-list API's operator settings, each bound by
// cmd/outpost to the flag its tag names and that flag's OUTPOST_*
// environment twin.
type Settings struct {
	ReportsPublic bool `flag:"reports-public" usage:"serve GET /banlist/reports without an API key"`
	ReportsPerMin int  `flag:"reports-rate-limit" usage:"POST /banlist/reports per minute per client IP; 0 disables"`
}

// DefaultSettings are the defaults docs/configuration.md lists.
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
	// Trust is the web of trust, whose standing each report's reporter
	// carries (reporter_wot); nil or without seeds: none.
	Trust *wot.WoT
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
		r.With(readReports).Get("/reports", handleReports(svc, cfg.Trust))
	})

	r.Route("/admin", func(r chi.Router) {
		r.With(auth(banlist.RoleModerator)).Post("/ban", handleBan(svc))
		r.With(auth(banlist.RoleModerator)).Post("/temp-ban", handleTempBan(svc))
		r.With(auth(banlist.RoleModerator)).Post("/unban", handleUnban(svc))
		r.With(auth(banlist.RoleModerator)).Post("/bans", handleBanMany(svc))
		r.With(auth(banlist.RoleViewer)).Get("/bans", handleBans(svc, cfg.Now))
		r.With(auth(banlist.RoleViewer)).Get("/words", handleWords(svc))
		r.With(auth(banlist.RoleModerator)).Post("/words", handleAddWord(svc))
		r.With(auth(banlist.RoleModerator)).Delete("/words/{word}", handleRemoveWord(svc))
		r.With(auth(banlist.RoleAdmin)).Get("/keys", handleKeys(svc))
		r.With(auth(banlist.RoleAdmin)).Post("/keys", handleCreateKey(svc))
		r.With(auth(banlist.RoleAdmin)).Delete("/keys/{key}", handleRevokeKey(svc))
		r.With(auth(banlist.RoleAdmin)).Get("/audit", handleAudit(svc))

		// The moderation lists NIP-86 also manages (access.go).
		r.With(auth(banlist.RoleViewer)).Get("/allowed-pubkeys", listing("pubkeys", allowedPubKeys(svc)))
		r.With(auth(banlist.RoleModerator)).Post("/allow-pubkey", handleAllow(svc))
		r.With(auth(banlist.RoleModerator)).Post("/unallow-pubkey", handleUnallow(svc))
		r.With(auth(banlist.RoleViewer)).Get("/kinds", listing("kinds", svc.KindRules))
		r.With(auth(banlist.RoleModerator)).Post("/allow-kind", handleKind("allowed", (*banlist.Service).AllowKind, svc))
		r.With(auth(banlist.RoleModerator)).Post("/disallow-kind", handleKind("disallowed", (*banlist.Service).DisallowKind, svc))
		r.With(auth(banlist.RoleModerator)).Post("/clear-kind", handleKind("cleared", (*banlist.Service).ClearKind, svc))
		r.With(auth(banlist.RoleViewer)).Get("/blocked-ips", listing("ips", svc.BlockedIPs))
		r.With(auth(banlist.RoleModerator)).Post("/block-ip", handleBlockIP(svc))
		r.With(auth(banlist.RoleModerator)).Post("/unblock-ip", handleUnblockIP(svc))
		r.With(auth(banlist.RoleViewer)).Get("/reported-events", listing("events", svc.EventsNeedingModeration))
		r.With(auth(banlist.RoleViewer)).Get("/banned-events", listing("events", svc.BannedEvents))
		r.With(auth(banlist.RoleModerator)).Post("/ban-event", handleEvent("banned", (*banlist.Service).BanEvent, svc))
		r.With(auth(banlist.RoleModerator)).Post("/unban-event", handleEvent("unbanned", dropReason((*banlist.Service).UnbanEvent), svc))
		r.With(auth(banlist.RoleViewer)).Get("/allowed-events", listing("events", svc.AllowedEvents))
		r.With(auth(banlist.RoleModerator)).Post("/allow-event", handleEvent("allowed", (*banlist.Service).AllowEvent, svc))
		r.With(auth(banlist.RoleModerator)).Post("/unallow-event", handleEvent("unallowed", dropReason((*banlist.Service).UnallowEvent), svc))
	})
	return r
}
