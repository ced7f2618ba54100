package faucetapi

import (
	"bytes"
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/nip98"
	"github.com/outpost-relay/outpost/pubkey"
	"github.com/outpost-relay/outpost/ratelimit"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI is the service's OpenAPI 3.1 document.
func OpenAPI() []byte { return openAPI }

func handleOpenAPI() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		httpapi.EncodeBytes(w, http.StatusOK, bytes.TrimSpace(openAPI))
	}
}

func handleHealth(svc *faucet.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := svc.Health(r.Context())
		status := http.StatusOK
		if h.Status == "down" {
			status = http.StatusServiceUnavailable
		}
		httpapi.Encode(w, status, h)
	}
}

// Health is the faucet's part of the root /health.
func Health(svc *faucet.Service) func(ctx context.Context) (string, any) {
	return func(ctx context.Context) (string, any) {
		h := svc.Health(ctx)
		return h.Status, map[string]any{"store": h.Checks["store"], "mint": h.Checks["mint"], "reason": h.Reason}
	}
}

func handleConfig(svc *faucet.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		httpapi.Encode(w, http.StatusOK, svc.PublicConfig())
	}
}

func handleStats(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st, err := svc.Stats(r.Context())
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, http.StatusOK, st)
	}
}

// handleDeposit describes deposits; ?amount=N also makes an invoice (and
// counts against the deposit rate limit, as it costs the mint a quote).
func handleDeposit(svc *faucet.Service, log *slog.Logger, limit *ratelimit.Limiter) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var amount int64
		if s, ok := r.URL.Query()["amount"]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(s[0]), 10, 64)
			if err != nil || n <= 0 {
				httpapi.Error(w, r, log, outpost.Errorf(outpost.Invalid, "invalid_amount", "amount must be a positive whole number of sats").With("field", "amount"))
				return
			}
			if err := httpapi.Allow(limit, httpapi.ClientIP(r)); err != nil {
				httpapi.Error(w, r, log, err)
				return
			}
			amount = n
		}
		info, err := svc.DepositInfo(r.Context(), amount)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, http.StatusOK, info)
	}
}

type redeemRequest struct {
	Token string `json:"token"`
}

func (q *redeemRequest) Valid() error {
	if strings.TrimSpace(q.Token) == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_token", "token is required: a cashuA... or cashuB... string").With("field", "token")
	}
	return nil
}

func handleRedeem(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := httpapi.Decode[redeemRequest](w, r)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		res, err := svc.RedeemEcash(r.Context(), req.Token)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, http.StatusOK, res)
	}
}

type simulateRequest struct {
	Invoice string `json:"invoice"`
}

func (q *simulateRequest) Valid() error {
	if strings.TrimSpace(q.Invoice) == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_bolt11", "invoice is required").With("field", "invoice")
	}
	return nil
}

func handleSimulatePayment(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := httpapi.Decode[simulateRequest](w, r)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		hash, err := svc.SimulatePayment(r.Context(), req.Invoice)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, http.StatusOK, map[string]any{"paid": true, "payment_hash": hash})
	}
}

type loginResponse struct {
	Token       string             `json:"token"`
	ExpiresAt   int64              `json:"expires_at"`
	LoginMethod string             `json:"login_method"`
	User        faucet.UserProfile `json:"user"`
}

func handleLogin(svc *faucet.Service, v *nip98.Verifier, publicURL string, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Nostr ") {
			httpapi.Error(w, r, log, outpost.Errorf(outpost.Unauthorized, "unauthorized",
				"log in with a NIP-98 header: Authorization: Nostr <base64 kind-27235 event>").With("check", "header"))
			return
		}
		pk, err := verifyNIP98(v, publicURL, w, r)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		login(w, r, svc, log, pk, faucet.LoginNIP98)
	}
}

func login(w http.ResponseWriter, r *http.Request, svc *faucet.Service, log *slog.Logger, pk, method string) {
	token, sess, u, err := svc.Login(r.Context(), pk, method)
	if err != nil {
		httpapi.Error(w, r, log, err)
		return
	}
	httpapi.Encode(w, http.StatusOK, loginResponse{Token: token, ExpiresAt: sess.ExpiresAt, LoginMethod: method, User: u.Public()})
}

type loginNPubRequest struct {
	NPub   string `json:"npub"`
	pubkey string
}

func (q *loginNPubRequest) Valid() error {
	pk, err := pubkey.Parse(q.NPub)
	if err != nil {
		return outpost.Errorf(outpost.Invalid, "invalid_pubkey", "npub must be a public key (npub or 64-character hex)").With("field", "npub")
	}
	q.pubkey = pk
	return nil
}

func handleLoginNPub(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := httpapi.Decode[loginNPubRequest](w, r)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		login(w, r, svc, log, req.pubkey, faucet.LoginNPub)
	}
}

type meResponse struct {
	User        faucet.UserProfile `json:"user"`
	LoginMethod string             `json:"login_method"`
	Eligibility faucet.Eligibility `json:"eligibility"`
}

func handleMe(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := sessionFromContext(r.Context())
		u, err := svc.EnsureUser(r.Context(), sess.PubKey)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		el, err := svc.Eligibility(r.Context(), sess, u, httpapi.ClientIP(r))
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, http.StatusOK, meResponse{User: u.Public(), LoginMethod: sess.Method, Eligibility: el})
	}
}

type quoteRequest struct {
	Method           string  `json:"method"`
	LightningAddress *string `json:"lightning_address"`
}

func (q *quoteRequest) Valid() error {
	for _, m := range faucet.Methods {
		if q.Method == m {
			return nil
		}
	}
	return outpost.Errorf(outpost.Invalid, "invalid_method", "method must be one of %s", strings.Join(faucet.Methods, ", ")).
		With("field", "method").With("allowed", faucet.Methods)
}

func handleQuote(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := httpapi.Decode[quoteRequest](w, r)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		addr := ""
		if req.LightningAddress != nil {
			addr = *req.LightningAddress
		}
		q, err := svc.Quote(r.Context(), sessionFromContext(r.Context()), httpapi.ClientIP(r), req.Method, addr)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, http.StatusOK, q)
	}
}

type confirmRequest struct {
	QuoteID string `json:"quote_id"`
	Bolt11  string `json:"bolt11"`
}

func (q *confirmRequest) Valid() error {
	if q.QuoteID == "" || len(q.QuoteID) > 100 {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "quote_id is required").With("field", "quote_id")
	}
	return nil
}

func handleConfirm(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := httpapi.Decode[confirmRequest](w, r)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		res, status, err := svc.Confirm(r.Context(), sessionFromContext(r.Context()), httpapi.ClientIP(r), req.QuoteID, strings.TrimSpace(req.Bolt11))
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, status, res)
	}
}

func handleRefreshProfile(svc *faucet.Service, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, err := svc.RefreshProfile(r.Context(), sessionFromContext(r.Context()).PubKey)
		if err != nil {
			httpapi.Error(w, r, log, err)
			return
		}
		httpapi.Encode(w, http.StatusOK, u.Public())
	}
}
