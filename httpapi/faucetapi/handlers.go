package faucetapi

import (
	_ "embed"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

//go:embed openapi.json
var openAPI []byte

func handleConfig(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return httpapi.Encode(w, http.StatusOK, svc.PublicConfig())
	})
}

func handleStats(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		st, err := svc.Stats(r.Context())
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, st)
	})
}

// handleDeposit describes deposits; ?amount=N also makes an invoice (and
// counts against the deposit rate limit, as it costs the mint a quote).
func handleDeposit(svc *faucet.Service, limit *ratelimit.Limiter) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		var amount int64
		if s, ok := r.URL.Query()["amount"]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(s[0]), 10, 64)
			if err != nil || n <= 0 {
				return outpost.Errorf(outpost.Invalid, "invalid_amount", "amount must be a positive whole number of sats").With("field", "amount")
			}
			if err := httpapi.Allow(limit, httpapi.ClientIP(r)); err != nil {
				return err
			}
			amount = n
		}
		info, err := svc.DepositInfo(r.Context(), amount)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, info)
	})
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

func handleRedeem(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		req, err := httpapi.Decode[redeemRequest](w, r)
		if err != nil {
			return err
		}
		res, err := svc.RedeemEcash(r.Context(), req.Token)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, res)
	})
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

func handleSimulatePayment(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		req, err := httpapi.Decode[simulateRequest](w, r)
		if err != nil {
			return err
		}
		hash, err := svc.SimulatePayment(r.Context(), req.Invoice)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"paid": true, "payment_hash": hash})
	})
}

type loginResponse struct {
	Token       string             `json:"token"`
	ExpiresAt   int64              `json:"expires_at"`
	LoginMethod string             `json:"login_method"`
	User        faucet.UserProfile `json:"user"`
}

func handleLogin(svc *faucet.Service, v *nip98.Verifier, publicURL string) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Nostr ") {
			return outpost.Errorf(outpost.Unauthorized, "unauthorized",
				"log in with a NIP-98 header: Authorization: Nostr <base64 kind-27235 event>").With("check", "header")
		}
		pk, err := verifyNIP98(v, publicURL, w, r)
		if err != nil {
			return err
		}
		return login(w, r, svc, pk, faucet.LoginNIP98)
	})
}

func login(w http.ResponseWriter, r *http.Request, svc *faucet.Service, pk, method string) error {
	token, sess, u, err := svc.Login(r.Context(), pk, method)
	if err != nil {
		return err
	}
	return httpapi.Encode(w, http.StatusOK, loginResponse{Token: token, ExpiresAt: sess.ExpiresAt, LoginMethod: method, User: u.Public()})
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

func handleLoginNPub(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		req, err := httpapi.Decode[loginNPubRequest](w, r)
		if err != nil {
			return err
		}
		return login(w, r, svc, req.pubkey, faucet.LoginNPub)
	})
}

type meResponse struct {
	User        faucet.UserProfile    `json:"user"`
	LoginMethod string                `json:"login_method"`
	Eligibility faucet.Eligibility    `json:"eligibility"`
	WoT         *faucet.ClaimStanding `json:"wot"` // null without a web of trust
}

func handleMe(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		sess := sessionFromContext(r.Context())
		u, err := svc.EnsureUser(r.Context(), sess.PubKey)
		if err != nil {
			return err
		}
		el, err := svc.Eligibility(r.Context(), sess, u, httpapi.ClientIP(r))
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, meResponse{User: u.Public(), LoginMethod: sess.Method, Eligibility: el, WoT: svc.ClaimStanding(sess.PubKey)})
	})
}

type quoteRequest struct {
	Method           string  `json:"method"`
	LightningAddress *string `json:"lightning_address"`
	EventID          *string `json:"event_id"` // nutzap: the note the claim answers
}

func (q *quoteRequest) Valid() error {
	if q.EventID != nil && !nostr.IsValid32ByteHex(*q.EventID) {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "event_id must be an event id (64 lower-case hex characters)").With("field", "event_id")
	}
	for _, m := range faucet.Methods {
		if q.Method == m {
			return nil
		}
	}
	return outpost.Errorf(outpost.Invalid, "invalid_method", "method must be one of %s", strings.Join(faucet.Methods, ", ")).
		With("field", "method").With("allowed", faucet.Methods)
}

func handleQuote(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		req, err := httpapi.Decode[quoteRequest](w, r)
		if err != nil {
			return err
		}
		addr := ""
		if req.LightningAddress != nil {
			addr = *req.LightningAddress
		}
		note := ""
		if req.EventID != nil {
			note = *req.EventID
		}
		q, err := svc.Quote(r.Context(), sessionFromContext(r.Context()), httpapi.ClientIP(r), req.Method, addr, note)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, q)
	})
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

func handleConfirm(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		req, err := httpapi.Decode[confirmRequest](w, r)
		if err != nil {
			return err
		}
		res, err := svc.Confirm(r.Context(), sessionFromContext(r.Context()), httpapi.ClientIP(r), req.QuoteID, strings.TrimSpace(req.Bolt11))
		if err != nil {
			return err
		}
		status := http.StatusOK
		if res.Status == faucet.ClaimPending {
			status = http.StatusAccepted // the payment is in flight; the claim settles later
		}
		return httpapi.Encode(w, status, res)
	})
}

// handleClaimStatus tells the caller what became of a quote of theirs.
func handleClaimStatus(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		id := chi.URLParam(r, "quote_id")
		if len(id) > 100 {
			return outpost.Errorf(outpost.Invalid, "invalid_request", "quote_id is too long").With("field", "quote_id")
		}
		res, err := svc.ClaimStatus(r.Context(), sessionFromContext(r.Context()), id)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, res)
	})
}

func handleRefreshProfile(svc *faucet.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		u, err := svc.RefreshProfile(r.Context(), sessionFromContext(r.Context()).PubKey)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, u.Public())
	})
}
