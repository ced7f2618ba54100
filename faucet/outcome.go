package faucet

import (
	"context"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Outcomes of a quote whose claim did not pay, besides a claim's states
// (paid, pending, failed).
const (
	// OutcomeOpen: nothing was paid and the quote can be confirmed (again:
	// a claim that failed having paid nothing gives its quote back).
	OutcomeOpen = "open"
	// OutcomeExpired: nothing was paid and the quote is past its time (or
	// was replaced): ask for a new one.
	OutcomeExpired = "expired"
)

// ClaimStatus is what became of a quote: whether its claim was paid (and
// with what), is pending, failed, or was never taken. It answers a client
// whose confirm got no answer — a cut connection, a crash of the faucet.
type ClaimStatus struct {
	QuoteID   string `json:"quote_id"`
	Status    string `json:"status"`     // paid, pending, failed, open or expired
	ExpiresAt int64  `json:"expires_at"` // the quote's
	// Reason is why the quote's last claim failed; null otherwise.
	Reason *string `json:"reason"`
	// Claim is the quote's last claim as confirm answers it (a failed one
	// too); null when it was never confirmed.
	Claim *ConfirmResult `json:"claim"`
}

// ClaimStatus says what became of the caller's quote quoteID. Quotes are
// kept a week after they expire; after that, and for another user's, the
// answer is 404 quote_not_found.
func (s *Service) ClaimStatus(ctx context.Context, sess Session, quoteID string) (ClaimStatus, error) {
	var q Quote
	var c Claim
	var found, claimed bool
	err := s.db.View(func(txn *kv.Txn) (err error) {
		if q, found, err = getQuote(txn, quoteID); err != nil || !found || q.ClaimID == "" {
			return err
		}
		c, claimed, err = getClaim(txn, q.ClaimID)
		return err
	})
	if err != nil {
		return ClaimStatus{}, err
	}
	if !found || q.PubKey != sess.PubKey {
		return ClaimStatus{}, outpost.Errorf(outpost.NotFound, "quote_not_found", "no such quote of yours")
	}
	st := ClaimStatus{QuoteID: q.ID, ExpiresAt: q.ExpiresAt, Status: OutcomeExpired}
	if claimed {
		r := c.result(c.Token)
		st.Claim, st.Reason = &r, strOrNil(c.Reason)
	}
	switch {
	case q.State == QuoteUsed && claimed:
		st.Status = st.Claim.Status
	case q.State == QuoteOpen && s.now().Unix() < q.ExpiresAt:
		st.Status = OutcomeOpen
	}
	return st, nil
}
