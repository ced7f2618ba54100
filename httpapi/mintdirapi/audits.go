package mintdirapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/mintdir"
)

// Audits is the auditor as the API uses it (package audit). Without one
// (--audit off) every mint's audit list is empty and the admin routes are
// not served.
type Audits interface {
	Entries(mint string, offset, limit int) ([]audit.Entry, bool, error)
	Holdings() (audit.Holdings, error)
	SettleDeposits(ctx context.Context) error
	DepositQuote(ctx context.Context, mint string, amount int64) (audit.Deposit, error)
	DepositToken(ctx context.Context, token string) (audit.Deposit, error)
}

// settleFor bounds what GET /admin/audit waits for the mints.
const settleFor = 5 * time.Second

var auditPaging = httpapi.Paging{Default: 50, Max: 500, Cursor: httpapi.Offset}

// AuditList is GET /mints/{id}/audits.
type AuditList struct {
	Audits []audit.Entry `json:"audits"`
}

func handleAudits(a Audits) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		page, err := auditPaging.Parse(r)
		if err != nil || a == nil {
			return AuditList{Audits: []audit.Entry{}}, err
		}
		es, _, err := a.Entries(m.CanonicalURL, page.Offset, page.Limit)
		return AuditList{Audits: es}, err
	}
}

// auditRoutes are the admin routes of the audit wallet, behind admin (no
// key passes without one); with audits off they answer 503 audit_off.
func auditRoutes(r chi.Router, a Audits, admin func(http.Handler) http.Handler) {
	if admin == nil {
		admin = func(http.Handler) http.Handler {
			return httpapi.Handle(func(http.ResponseWriter, *http.Request) error {
				return outpost.Errorf(outpost.Unauthorized, "unauthorized", "missing or invalid API key")
			})
		}
	}
	if a == nil {
		a = auditOff{}
	}
	r.With(admin).Get("/admin/audit", httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		// Deposits paid since are minted first, so a deposit shows as soon
		// as it is paid; a mint that fails or stalls this only delays it
		// to the next round.
		ctx, cancel := context.WithTimeout(r.Context(), settleFor)
		_ = a.SettleDeposits(ctx)
		cancel()
		h, err := a.Holdings()
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, h)
	}))
	r.With(admin).Post("/admin/audit/deposit", httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[depositRequest](w, r)
		if err != nil {
			return err
		}
		var d audit.Deposit
		if q.Token != "" {
			d, err = a.DepositToken(r.Context(), q.Token)
		} else {
			d, err = a.DepositQuote(r.Context(), q.MintURL, q.Amount)
		}
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusCreated, d)
	}))
}

type depositRequest struct {
	MintURL string `json:"mint_url"`
	Amount  int64  `json:"amount"`
	Token   string `json:"token"`
}

func (q *depositRequest) Valid() error {
	q.Token, q.MintURL = strings.TrimSpace(q.Token), strings.TrimSpace(q.MintURL)
	switch {
	case q.Token != "" && (q.MintURL != "" || q.Amount != 0):
		return outpost.Errorf(outpost.Invalid, "invalid_request", "give either token, or mint_url and amount")
	case q.Token != "":
		return nil
	case q.MintURL == "":
		return outpost.Errorf(outpost.Invalid, "invalid_mint_url", "mint_url is required (or a token)").With("field", "mint_url")
	case q.Amount < 1:
		return outpost.Errorf(outpost.Invalid, "invalid_amount", "amount must be a positive number of sats").With("field", "amount")
	}
	return nil
}

// auditOff is the auditor while --audit is off.
type auditOff struct{}

var errAuditOff = outpost.Errorf(outpost.Unavailable, "audit_off", "audits are off (--audit)")

func (auditOff) Entries(string, int, int) ([]audit.Entry, bool, error) {
	return []audit.Entry{}, false, nil
}
func (auditOff) Holdings() (audit.Holdings, error)    { return audit.Holdings{}, errAuditOff }
func (auditOff) SettleDeposits(context.Context) error { return nil }
func (auditOff) DepositQuote(context.Context, string, int64) (audit.Deposit, error) {
	return audit.Deposit{}, errAuditOff
}
func (auditOff) DepositToken(context.Context, string) (audit.Deposit, error) {
	return audit.Deposit{}, errAuditOff
}
