// Package faucetapi serves the test-sats faucet's REST interface
// (docs/faucet.md).
package faucetapi

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
)

// Config configures the faucet API.
type Config struct {
	Service  *faucet.Service
	Verifier *nip98.Verifier // one per program: its replay cache must see every event
	// PublicURL is OUTPOST_PUBLIC_URL: a NIP-98 event's u tag must be it
	// plus the request's path and query. The Host header is never used.
	PublicURL string
	Log       *slog.Logger
	Now       func() time.Time
	// Per client IP per minute, on top of the program-wide limit. Logins
	// (faucet.Settings.LoginLimit): 0 is none; deposits: 0 means 20.
	LoginPerMin, DepositPerMin int
}

// Routes returns the faucet router; every route of the service is here.
func Routes(cfg Config) http.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DepositPerMin == 0 {
		cfg.DepositPerMin = 20
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	svc := cfg.Service
	loginLimit := httpapi.RateLimit(ratelimit.New(cfg.LoginPerMin, time.Minute, cfg.Now)) // nil when 0: none
	depositLimit := ratelimit.New(cfg.DepositPerMin, time.Minute, cfg.Now)
	user := requireUser(svc, cfg.Verifier, cfg.PublicURL)

	r := chi.NewRouter()
	r.Use(httpapi.Logger(cfg.Log))
	r.NotFound(httpapi.NotFound)
	r.MethodNotAllowed(httpapi.MethodNotAllowed)
	r.Use(httpapi.CORS)

	// Public
	r.Get("/health", httpapi.ServeHealth(svc.Health))
	r.Get("/openapi.json", httpapi.ServeJSON(openAPI))
	r.Get("/config", handleConfig(svc))
	r.Get("/stats", handleStats(svc))
	r.Get("/deposit", handleDeposit(svc, depositLimit))
	r.With(httpapi.RateLimit(depositLimit)).Post("/deposit/redeem-ecash", handleRedeem(svc))
	r.With(httpapi.RateLimit(depositLimit)).Post("/deposit/simulate-payment", handleSimulatePayment(svc))

	// Auth
	r.With(loginLimit).Post("/auth/login", handleLogin(svc, cfg.Verifier, cfg.PublicURL))
	r.With(loginLimit).Post("/auth/login-npub", handleLoginNPub(svc))
	r.With(user).Get("/auth/me", handleMe(svc))

	// Claim
	r.With(user).Post("/claim/quote", handleQuote(svc))
	r.With(user).Post("/claim/confirm", handleConfirm(svc))
	r.With(user).Get("/claims/{quote_id}", handleClaimStatus(svc))

	// User
	r.With(user).Post("/user/refresh-profile", handleRefreshProfile(svc))
	return r
}
