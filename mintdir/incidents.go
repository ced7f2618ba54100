package mintdir

import (
	"context"
	"errors"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Incident is a time a mint was offline: it opens when a mint that was up
// goes offline (its start is the first failed check) and closes at the next
// successful check. A single failed check is no incident.
type Incident struct {
	StartedAt  time.Time  `json:"started_at"`
	ResolvedAt *time.Time `json:"resolved_at"`
	Severity   string     `json:"severity"`          // set when resolved; open ones are rated on read
	SeenBy     []string   `json:"seen_by,omitempty"` // hex keys of the monitors that saw the mint offline during it
	Cause      string     `json:"cause,omitempty"`   // CauseOffline ("") or CausePayoutFailed
	Detail     string     `json:"detail,omitempty"`  // what failed, for a failed payout
}

// Incident causes.
const (
	CauseOffline      = "offline"
	CausePayoutFailed = "payout_failed" // the directory's audit (package audit) of the mint failed
)

// PayoutFailed records that the directory's audit of the mint at mintURL
// failed at `at`: an incident over at once, major, seen by this outpost,
// counted in the mint's incidents (and so its trust) like an outage. A
// mint the directory does not list is left alone.
func (d *Directory) PayoutFailed(ctx context.Context, mintURL string, at time.Time, detail string) error {
	m, err := d.GetByURL(ctx, mintURL)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	inc := Incident{StartedAt: at, ResolvedAt: &at, Severity: SeverityMajor, Cause: CausePayoutFailed, Detail: detail}
	if d.cfg.Self != "" {
		inc.SeenBy = []string{d.cfg.Self}
	}
	if err := d.db.Record(func(txn *kv.Txn) error { return kv.PutJSON(txn, timeKey(kIncident, m.ID, at), &inc) }); err != nil {
		return err
	}
	return d.refreshSummary(ctx, m.ID, false)
}

// Severities.
const (
	SeverityMinor    = "minor"    // under 15 minutes
	SeverityMajor    = "major"    // under 4 hours
	SeverityCritical = "critical" // 4 hours or more, or still open after 4 hours
)

func severity(d time.Duration) string {
	switch {
	case d < 15*time.Minute:
		return SeverityMinor
	case d < 4*time.Hour:
		return SeverityMajor
	}
	return SeverityCritical
}

// Duration is how long the incident lasted, or has lasted until now.
func (i Incident) Duration(now time.Time) time.Duration {
	end := now
	if i.ResolvedAt != nil {
		end = *i.ResolvedAt
	}
	return max(end.Sub(i.StartedAt), 0)
}

// SeverityAt rates the incident: by its length once resolved, by its length
// so far while open.
func (i Incident) SeverityAt(now time.Time) string {
	if i.ResolvedAt != nil && i.Severity != "" {
		return i.Severity
	}
	return severity(i.Duration(now))
}

// Incidents returns a mint's incidents that started before `before` (zero:
// any), newest first, at most limit.
func (d *Directory) Incidents(ctx context.Context, m *Mint, before time.Time, limit int) ([]Incident, error) {
	out, err := newestBefore[Incident](d, kIncident, m.ID, before, limit)
	for i := range out {
		if out[i].SeenBy == nil && d.cfg.Self != "" {
			out[i].SeenBy = []string{d.cfg.Self} // from before monitors were followed: ours alone
		}
	}
	return out, err
}

// countIncidents counts incidents started since each of the given times.
func countIncidents(txn *kv.Txn, id ID, since ...time.Time) ([]int, error) {
	counts := make([]int, len(since))
	oldest := since[0]
	for _, s := range since {
		if s.Before(oldest) {
			oldest = s
		}
	}
	prefix := perMintPrefix(kIncident, id)
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(timeKey(kIncident, id, oldest)); it.Valid(); it.Next() {
		started := time.UnixMilli(int64(u64(it.Item().Key()[len(prefix):])))
		for i, s := range since {
			if !started.Before(s) {
				counts[i]++
			}
		}
	}
	return counts, nil
}
