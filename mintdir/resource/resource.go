// Package resource declares the mint directory's API resources, field for
// field as the seed and openapi.json give them: the REST handlers answer
// these types and the pages decode them, so the three can't drift apart
// (mintdirapi's TestTypesMatchTheDocument compares them with the document).
// Every field is always present; null when unknown. Times are whole seconds
// in UTC, so they read as "2006-01-02T15:04:05Z".
package resource

import (
	"cmp"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/mintdir"
)

func at(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

func atPtr(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	s := at(*t)
	return &s
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Mint is a mint's core record, GET /mints/{mint_id}.
type Mint struct {
	MintID        mintdir.ID `json:"mint_id"`
	CanonicalURL  string     `json:"canonical_url"`
	URLs          []string   `json:"urls"`
	Name          *string    `json:"name"`
	IconURL       *string    `json:"icon_url"`
	Status        string     `json:"status"`
	OfflineSince  *time.Time `json:"offline_since"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	LastFailureAt *time.Time `json:"last_failure_at"`
	Uptime24h     *float64   `json:"uptime_24h"`
	Uptime7d      *float64   `json:"uptime_7d"`
	Uptime30d     *float64   `json:"uptime_30d"`
	Incidents7d   int        `json:"incidents_7d"`
	Incidents30d  int        `json:"incidents_30d"`
	TrustScore    int        `json:"trust_score"`
	TrustLevel    string     `json:"trust_level"`
	// The directory's audits of the mint (package audit; zero while off).
	Audits30d          int        `json:"audits_30d"`
	AuditSuccessRate   *float64   `json:"audit_success_rate_30d"`
	LastAuditAt        *time.Time `json:"last_audit_at"`
	LastAuditFailureAt *time.Time `json:"last_audit_failure_at"`
	AuditHeldSats      uint64     `json:"audit_held_sats"`
}

// MintOf is m's core record.
func MintOf(m *mintdir.Mint) Mint {
	s := m.Summary
	return Mint{MintID: m.ID, CanonicalURL: m.CanonicalURL, URLs: m.URLList(), Name: strOrNil(m.Name), IconURL: strOrNil(m.IconURL),
		Status: m.Status, OfflineSince: atPtr(m.OfflineSince), LastSuccessAt: atPtr(m.LastSuccessAt), LastFailureAt: atPtr(m.LastFailureAt),
		Uptime24h: s.Uptime24h, Uptime7d: s.Uptime7d, Uptime30d: s.Uptime30d, Incidents7d: s.Incidents7d, Incidents30d: s.Incidents30d,
		TrustScore: s.Trust.Score, TrustLevel: s.Trust.Level,
		Audits30d: s.Audits.Audits30d, AuditSuccessRate: s.Audits.SuccessRate30d, LastAuditAt: s.Audits.LastAuditAt,
		LastAuditFailureAt: s.Audits.LastAuditFailureAt, AuditHeldSats: s.Audits.HeldSats}
}

// Title is how a mint is called: its name, else its URL.
func (m Mint) Title() string {
	if m.Name != nil && strings.TrimSpace(*m.Name) != "" {
		return *m.Name
	}
	return strings.TrimPrefix(strings.TrimPrefix(m.CanonicalURL, "https://"), "http://")
}

// MintList is GET /mints: a page of the catalogue.
type MintList struct {
	Mints  []Mint `json:"mints"`
	Total  int    `json:"total"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
}

// URL is one of a mint's addresses.
type URL struct {
	URL    string `json:"url"`
	Type   string `json:"type"`
	Active bool   `json:"active"`
}

// URLs is GET /mints/{mint_id}/urls.
type URLs struct {
	CanonicalURL string `json:"canonical_url"`
	URLs         []URL  `json:"urls"`
}

// URLsOf lists m's addresses.
func URLsOf(m *mintdir.Mint) URLs {
	out := URLs{CanonicalURL: m.CanonicalURL, URLs: make([]URL, len(m.URLs))}
	for i, u := range m.URLs {
		out.URLs[i] = URL{URL: u.URL, Type: m.URLType(u.URL), Active: m.URLActive(u)}
	}
	return out
}

// Metadata is GET /mints/{mint_id}/metadata: the NUT-06 info and keysets.
type Metadata struct {
	Name            *string           `json:"name"`
	Pubkey          *string           `json:"pubkey"`
	Version         *string           `json:"version"`
	Description     *string           `json:"description"`
	DescriptionLong *string           `json:"description_long"`
	Contact         []mintdir.Contact `json:"contact"`
	Motd            *string           `json:"motd"`
	IconURL         *string           `json:"icon_url"`
	URLs            []string          `json:"urls"`
	TosURL          *string           `json:"tos_url"`
	Nuts            map[string]any    `json:"nuts"`
	ServerTime      *time.Time        `json:"server_time"`
	LastFetchedAt   *time.Time        `json:"last_fetched_at"`
	Keysets         []mintdir.Keyset  `json:"keysets"`
}

// MetadataOf is m's metadata; all null before the first successful check
// (in is nil).
func MetadataOf(m *mintdir.Mint, meta mintdir.Metadata, in *mintdir.Info) Metadata {
	if in == nil {
		return Metadata{}
	}
	return Metadata{Name: strOrNil(in.Name), Pubkey: strOrNil(in.Pubkey), Version: strOrNil(in.Version),
		Description: strOrNil(in.Description), DescriptionLong: strOrNil(in.DescriptionLong), Contact: in.Contact,
		Motd: strOrNil(in.Motd), IconURL: strOrNil(in.IconURL), URLs: in.URLs, TosURL: strOrNil(in.TosURL), Nuts: in.Nuts,
		ServerTime: atPtr(m.ServerTime), LastFetchedAt: atPtr(m.MetaFetchedAt), Keysets: meta.Keysets}
}

// HistoryEntry is one change of a mint's metadata.
type HistoryEntry struct {
	FetchedAt  time.Time                 `json:"fetched_at"`
	ChangeType string                    `json:"change_type"`
	Diff       map[string]mintdir.Change `json:"diff"`
	Version    *string                   `json:"version"`
}

// HistoryEntryOf is e as the API shows it.
func HistoryEntryOf(e mintdir.HistoryEntry) HistoryEntry {
	diff := e.Diff
	if diff == nil {
		diff = map[string]mintdir.Change{}
	}
	return HistoryEntry{FetchedAt: at(e.FetchedAt), ChangeType: e.ChangeType, Diff: diff, Version: strOrNil(e.Version)}
}

// History is GET /mints/{mint_id}/metadata/history, newest first.
type History struct {
	History []HistoryEntry `json:"history"`
}

// Status is GET /mints/{mint_id}/status: the status by consensus of the
// vantages, this outpost's own last check, and every fresh vantage.
type Status struct {
	Status        string     `json:"status"`
	OfflineSince  *time.Time `json:"offline_since"`
	LastCheckedAt *time.Time `json:"last_checked_at"`
	CurrentRTTMs  *int       `json:"current_rtt_ms"`
	LastError     *string    `json:"last_error"`
	Vantages      []Vantage  `json:"vantages"`
}

// Vantage is what one monitor sees of the mint: this outpost's own checks
// (self) or a followed monitor's latest fresh status event.
type Vantage struct {
	Monitor       string     `json:"monitor"` // npub
	Self          bool       `json:"self"`
	Status        string     `json:"status"`
	LastCheckedAt *time.Time `json:"last_checked_at"`
	RTTMs         *int       `json:"rtt_ms"`
	OfflineSince  *time.Time `json:"offline_since"`
}

// StatusOf is m's status with its vantages.
func StatusOf(m *mintdir.Mint, vantages []mintdir.Vantage) Status {
	out := Status{Status: m.Status, OfflineSince: atPtr(m.OfflineSince), LastCheckedAt: atPtr(m.LastCheckedAt),
		CurrentRTTMs: m.LastRTTMs, LastError: strOrNil(m.LastError), Vantages: make([]Vantage, len(vantages))}
	for i, v := range vantages {
		out.Vantages[i] = Vantage{Monitor: pubkey.NPub(v.Monitor), Self: v.Self, Status: v.Status,
			LastCheckedAt: atPtr(v.LastCheckedAt), RTTMs: v.RTTMs, OfflineSince: atPtr(v.OfflineSince)}
	}
	return out
}

// Uptime is GET /mints/{mint_id}/uptime.
type Uptime struct {
	Window          string   `json:"window"`
	UptimePct       *float64 `json:"uptime_pct"`
	DowntimeSeconds int64    `json:"downtime_seconds"`
	AvgRTTMs        *int     `json:"avg_rtt_ms"`
	P95RTTMs        *int     `json:"p95_rtt_ms"`
	TotalChecks     int64    `json:"total_checks"`
	OKChecks        int64    `json:"ok_checks"`
}

// UptimeOf is u over window w.
func UptimeOf(w mintdir.Window, u mintdir.Uptime) Uptime {
	return Uptime{Window: w.Name, UptimePct: u.UptimePct, DowntimeSeconds: u.DowntimeSec, AvgRTTMs: u.AvgRTTMs,
		P95RTTMs: u.P95RTTMs, TotalChecks: u.TotalChecks, OKChecks: u.OKChecks}
}

// Point is one bucket of the time series.
type Point struct {
	Timestamp time.Time `json:"timestamp"`
	State     string    `json:"state"`
	OK        bool      `json:"ok"`
	RTTMs     *int      `json:"rtt_ms"`
}

// PointOf is p as the API shows it.
func PointOf(p mintdir.Point) Point {
	return Point{Timestamp: at(p.Timestamp), State: p.State, OK: p.OK, RTTMs: p.RTTMs}
}

// Timeseries is GET /mints/{mint_id}/uptime/timeseries, newest first.
type Timeseries struct {
	Window string  `json:"window"`
	Bucket string  `json:"bucket"`
	Points []Point `json:"points"`
}

// Incident is one outage.
type Incident struct {
	StartedAt       time.Time  `json:"started_at"`
	ResolvedAt      *time.Time `json:"resolved_at"`
	DurationSeconds int64      `json:"duration_seconds"`
	Severity        string     `json:"severity"`
	SeenBy          []string   `json:"seen_by"` // npubs of the monitors that saw the mint offline
	Cause           string     `json:"cause"`   // offline, or payout_failed (an audit)
	Detail          *string    `json:"detail"`  // what failed, for a failed payout
}

// IncidentOf is i as of now.
func IncidentOf(i mintdir.Incident, now time.Time) Incident {
	out := Incident{StartedAt: at(i.StartedAt), ResolvedAt: atPtr(i.ResolvedAt),
		DurationSeconds: int64(i.Duration(now).Seconds()), Severity: i.SeverityAt(now), SeenBy: make([]string, 0, len(i.SeenBy)),
		Cause: cmp.Or(i.Cause, mintdir.CauseOffline), Detail: strOrNil(i.Detail)}
	for _, pk := range i.SeenBy {
		out.SeenBy = append(out.SeenBy, pubkey.NPub(pk))
	}
	return out
}

// Incidents is GET /mints/{mint_id}/incidents, newest first.
type Incidents struct {
	Incidents []Incident `json:"incidents"`
}

// Trust is GET /mints/{mint_id}/trust.
type Trust struct {
	ScoreTotal int               `json:"score_total"`
	ScoreLevel string            `json:"score_level"`
	Breakdown  mintdir.Breakdown `json:"breakdown"`
	ComputedAt time.Time         `json:"computed_at"`
}

// TrustOf is m's trust score.
func TrustOf(m *mintdir.Mint) Trust {
	t := m.Summary.Trust
	return Trust{ScoreTotal: t.Score, ScoreLevel: t.Level, Breakdown: t.Breakdown, ComputedAt: at(t.ComputedAt)}
}

// Review is one NIP-87 review of a mint.
type Review struct {
	EventID   string    `json:"event_id"`
	PubKey    string    `json:"pubkey"` // npub
	CreatedAt time.Time `json:"created_at"`
	Rating    *int      `json:"rating"`
	Content   string    `json:"content"`
	// Weight is the author's say in the trust score: 0 outside outpost's
	// web of trust (listed, not counted), 1 for everyone without one.
	Weight float64 `json:"weight"`
	// FollowedByViewer: with ?viewer=, whether the viewer follows the author.
	FollowedByViewer *bool `json:"followed_by_viewer,omitempty"`
}

// ReviewOf is r as the API shows it.
func ReviewOf(r mintdir.Review) Review {
	return Review{EventID: r.EventID, PubKey: pubkey.NPub(r.PubKey), CreatedAt: at(r.CreatedAt), Rating: r.Rating, Content: r.Content, Weight: r.Weight}
}

// Reviews is GET /mints/{mint_id}/reviews, newest first, with the summary
// of every review.
type Reviews struct {
	Reviews []Review              `json:"reviews"`
	Summary mintdir.ReviewSummary `json:"summary"`
	// FollowedByViewer: with ?viewer=, how many reviews of the page are by
	// keys the viewer follows.
	FollowedByViewer *int `json:"followed_by_viewer,omitempty"`
}

// Views is GET /mints/{mint_id}/views.
type Views struct {
	Views24h          int64   `json:"views_24h"`
	Views7d           int64   `json:"views_7d"`
	Views30d          int64   `json:"views_30d"`
	UniqueSessions30d int64   `json:"unique_sessions_30d"`
	ViewVelocity      float64 `json:"view_velocity"`
}

// ViewsOf is v as the API shows it.
func ViewsOf(v mintdir.Views) Views {
	return Views{Views24h: v.Views24h, Views7d: v.Views7d, Views30d: v.Views30d,
		UniqueSessions30d: v.UniqueSessions30d, ViewVelocity: v.Velocity}
}

// Features is GET /mints/{mint_id}/features.
type Features struct {
	SupportedNuts            []int    `json:"supported_nuts"`
	SupportsBolt11           *bool    `json:"supports_bolt11"`
	MinAmount                *uint64  `json:"min_amount"`
	MaxAmount                *uint64  `json:"max_amount"`
	HasTorEndpoint           bool     `json:"has_tor_endpoint"`
	HasMultipleURLs          bool     `json:"has_multiple_urls"`
	FeatureCompletenessScore *float64 `json:"feature_completeness_score"`
}

// FeaturesOf: what comes from the info is null until the first successful
// check; what comes from the URL list is always known.
func FeaturesOf(m *mintdir.Mint) Features {
	out := Features{HasMultipleURLs: len(m.URLs) > 1}
	for _, u := range m.URLs {
		if mintdir.IsOnion(u.URL) {
			out.HasTorEndpoint = true
		}
	}
	if f := m.Features; f != nil {
		bolt11, score := f.SupportsBolt11, f.Completeness
		out.SupportedNuts, out.SupportsBolt11, out.MinAmount, out.MaxAmount = f.SupportedNuts, &bolt11, f.MinAmount, f.MaxAmount
		out.FeatureCompletenessScore = &score
	}
	return out
}

// Submitted is the answer of POST /mints/submit.
type Submitted struct {
	MintID  mintdir.ID `json:"mint_id"`
	Status  string     `json:"status"` // "queued" or "exists"
	Message string     `json:"message"`
}
