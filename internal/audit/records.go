package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Entry is one mint's part in one round, as GET /mintdir/mints/{id}/audits
// answers it.
type Entry struct {
	At             time.Time `json:"at"`
	Role           string    `json:"role"` // payer or payee
	Counterpart    string    `json:"counterpart"`
	AmountSats     uint64    `json:"amount_sats"`
	FeeSats        uint64    `json:"fee_sats"`
	FeeReserveSats uint64    `json:"fee_reserve_sats"`
	Ms             int64     `json:"ms"`
	Outcome        string    `json:"outcome"` // ok, failed or pending
	Error          *string   `json:"error"`
}

func mintNS(mint string) []byte {
	h := sha256.Sum256([]byte(mint))
	return h[:8]
}

// entryPrefix is where mint's entries are, newest first.
func entryPrefix(mint string) []byte { return kv.Key(kv.PrefixAudit, kindEntry, mintNS(mint)) }

func entryKey(mint string, startedMs int64, round, role string) []byte {
	inv := binary.BigEndian.AppendUint64(nil, math.MaxUint64-uint64(startedMs))
	return kv.Key(kv.PrefixAudit, kindEntry, mintNS(mint), inv, []byte(round), []byte(role))
}

// entries are a round's parts for each mint it tested: the payer once it
// was asked for a melt quote, the payee once it was paid (or failed
// first), and still once it minted in a round the payer failed. A round cut short by us is no mint's failure.
func (r Round) entries() []struct {
	mint  string
	entry Entry
} {
	var out []struct {
		mint  string
		entry Entry
	}
	add := func(mint, role, counterpart string, ms int64) {
		e := Entry{At: time.UnixMilli(r.Started).UTC(), Role: role, Counterpart: counterpart, AmountSats: r.Amount, Ms: ms, Outcome: r.Outcome}
		if role == RolePayer {
			e.FeeSats, e.FeeReserveSats = r.Fee, r.FeeReserve
		}
		switch {
		case r.Fault != "" && r.Fault != role, role == RolePayer && r.Step == stepWait && r.Fault != RolePayer:
			e.Outcome = OutcomeOK // it did its part
		case e.Outcome == OutcomeFailed:
			s := r.Error
			e.Error = &s
		}
		out = append(out, struct {
			mint  string
			entry Entry
		}{mint, e})
	}
	if r.Fault == "" && r.Outcome == OutcomeFailed {
		return nil
	}
	if r.MeltSent != 0 || r.Fault == RolePayer {
		add(r.Payer, RolePayer, r.Payee, r.PayMs)
	}
	if r.Step == stepWait || r.Outcome == OutcomeOK || r.Fault == RolePayee || r.PayeeMs != 0 {
		add(r.Payee, RolePayee, r.Payer, r.PayeeMs)
	}
	return out
}

func (a *Auditor) putEntries(txn *kv.Txn, r Round) error {
	for _, e := range r.entries() {
		role := e.entry.Role
		if err := kv.PutJSON(txn, entryKey(e.mint, r.Started, r.ID, role), e.entry); err != nil {
			return err
		}
	}
	return nil
}

// Entries are mint's audit entries, newest first, skipping offset and
// returning up to limit, with whether there are more.
func (a *Auditor) Entries(mint string, offset, limit int) (out []Entry, more bool, err error) {
	out = []Entry{}
	err = a.db.View(func(txn *kv.Txn) error {
		i := 0
		return kv.EachJSON(txn, entryPrefix(mint), nil, false, func(_ []byte, e Entry) (bool, error) {
			i++
			switch {
			case i <= offset:
				return true, nil
			case len(out) == limit:
				more = true
				return false, nil
			}
			out = append(out, e)
			return true, nil
		})
	})
	return out, more, err
}

// Summary is a mint's audits in the last 30 days, for its core record.
type Summary struct {
	Audits30d          int        `json:"audits_30d"`
	SuccessRate30d     *float64   `json:"audit_success_rate_30d"` // ok of settled, 0–1; null without any
	LastAuditAt        *time.Time `json:"last_audit_at"`
	LastAuditFailureAt *time.Time `json:"last_audit_failure_at"`
	HeldSats           uint64     `json:"audit_held_sats"`
	// FailedInARow counts the newest settled entries that failed, up to 2.
	FailedInARow int `json:"-"`
}

// Summary reads mint's audits of the last 30 days.
func (a *Auditor) Summary(mint string) (Summary, error) {
	var s Summary
	since := a.now().Add(-30 * 24 * time.Hour)
	ok, settled, streak := 0, 0, true
	err := a.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, entryPrefix(mint), nil, false, func(_ []byte, e Entry) (bool, error) {
			if e.At.Before(since) {
				return false, nil
			}
			s.Audits30d++
			if s.LastAuditAt == nil {
				s.LastAuditAt = &e.At
			}
			switch e.Outcome {
			case OutcomeOK:
				ok, settled, streak = ok+1, settled+1, false
			case OutcomeFailed:
				settled++
				if s.LastAuditFailureAt == nil {
					s.LastAuditFailureAt = &e.At
				}
				if streak {
					s.FailedInARow++
				}
			}
			return true, nil
		})
	})
	if settled > 0 {
		r := float64(ok) / float64(settled)
		s.SuccessRate30d = &r
	}
	if err == nil {
		var h MintHolding
		if h, err = a.holding(mint); err == nil {
			s.HeldSats = h.HeldSats
		}
	}
	return s, err
}
