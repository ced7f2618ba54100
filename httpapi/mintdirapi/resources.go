package mintdirapi

import (
	"time"

	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/pubkey"
)

// The seed's resources, field for field. Every field is always present;
// null when unknown.

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func isoPtr(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := iso(*t)
	return &s
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type core struct {
	MintID        mintdir.ID `json:"mint_id"`
	CanonicalURL  string     `json:"canonical_url"`
	URLs          []string   `json:"urls"`
	Name          *string    `json:"name"`
	IconURL       *string    `json:"icon_url"`
	Status        string     `json:"status"`
	OfflineSince  *string    `json:"offline_since"`
	LastSuccessAt *string    `json:"last_success_at"`
	LastFailureAt *string    `json:"last_failure_at"`
	Uptime24h     *float64   `json:"uptime_24h"`
	Uptime7d      *float64   `json:"uptime_7d"`
	Uptime30d     *float64   `json:"uptime_30d"`
	Incidents7d   int        `json:"incidents_7d"`
	Incidents30d  int        `json:"incidents_30d"`
	TrustScore    int        `json:"trust_score"`
	TrustLevel    string     `json:"trust_level"`
}

func coreOf(m *mintdir.Mint) core {
	s := m.Summary
	return core{MintID: m.ID, CanonicalURL: m.CanonicalURL, URLs: m.URLList(), Name: strOrNil(m.Name), IconURL: strOrNil(m.IconURL),
		Status: m.Status, OfflineSince: isoPtr(m.OfflineSince), LastSuccessAt: isoPtr(m.LastSuccessAt), LastFailureAt: isoPtr(m.LastFailureAt),
		Uptime24h: s.Uptime24h, Uptime7d: s.Uptime7d, Uptime30d: s.Uptime30d, Incidents7d: s.Incidents7d, Incidents30d: s.Incidents30d,
		TrustScore: s.Trust.Score, TrustLevel: s.Trust.Level}
}

type mintURL struct {
	URL    string `json:"url"`
	Type   string `json:"type"`
	Active bool   `json:"active"`
}

type urlsResource struct {
	CanonicalURL string    `json:"canonical_url"`
	URLs         []mintURL `json:"urls"`
}

func urlsOf(m *mintdir.Mint) urlsResource {
	out := urlsResource{CanonicalURL: m.CanonicalURL, URLs: make([]mintURL, len(m.URLs))}
	for i, u := range m.URLs {
		out.URLs[i] = mintURL{URL: u.URL, Type: m.URLType(u.URL), Active: m.URLActive(u)}
	}
	return out
}

type metadataResource struct {
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
	ServerTime      *string           `json:"server_time"`
	LastFetchedAt   *string           `json:"last_fetched_at"`
	Keysets         []mintdir.Keyset  `json:"keysets"`
}

func metadataOf(m *mintdir.Mint, meta mintdir.Metadata, in *mintdir.Info) metadataResource {
	if in == nil {
		return metadataResource{}
	}
	return metadataResource{Name: strOrNil(in.Name), Pubkey: strOrNil(in.Pubkey), Version: strOrNil(in.Version),
		Description: strOrNil(in.Description), DescriptionLong: strOrNil(in.DescriptionLong), Contact: in.Contact,
		Motd: strOrNil(in.Motd), IconURL: strOrNil(in.IconURL), URLs: in.URLs, TosURL: strOrNil(in.TosURL), Nuts: in.Nuts,
		ServerTime: isoPtr(m.ServerTime), LastFetchedAt: isoPtr(m.MetaFetchedAt), Keysets: meta.Keysets}
}

type historyEntry struct {
	FetchedAt  string                    `json:"fetched_at"`
	ChangeType string                    `json:"change_type"`
	Diff       map[string]mintdir.Change `json:"diff"`
	Version    *string                   `json:"version"`
}

type statusResource struct {
	Status        string  `json:"status"`
	OfflineSince  *string `json:"offline_since"`
	LastCheckedAt *string `json:"last_checked_at"`
	CurrentRTTMs  *int    `json:"current_rtt_ms"`
	LastError     *string `json:"last_error"`
}

func statusOf(m *mintdir.Mint) statusResource {
	return statusResource{Status: m.Status, OfflineSince: isoPtr(m.OfflineSince), LastCheckedAt: isoPtr(m.LastCheckedAt),
		CurrentRTTMs: m.LastRTTMs, LastError: strOrNil(m.LastError)}
}

type uptimeResource struct {
	Window          string   `json:"window"`
	UptimePct       *float64 `json:"uptime_pct"`
	DowntimeSeconds int64    `json:"downtime_seconds"`
	AvgRTTMs        *int     `json:"avg_rtt_ms"`
	P95RTTMs        *int     `json:"p95_rtt_ms"`
	TotalChecks     int64    `json:"total_checks"`
	OKChecks        int64    `json:"ok_checks"`
}

type point struct {
	Timestamp string `json:"timestamp"`
	State     string `json:"state"`
	OK        bool   `json:"ok"`
	RTTMs     *int   `json:"rtt_ms"`
}

type incident struct {
	StartedAt       string  `json:"started_at"`
	ResolvedAt      *string `json:"resolved_at"`
	DurationSeconds int64   `json:"duration_seconds"`
	Severity        string  `json:"severity"`
}

func incidentOf(i mintdir.Incident, now time.Time) incident {
	return incident{StartedAt: iso(i.StartedAt), ResolvedAt: isoPtr(i.ResolvedAt),
		DurationSeconds: int64(i.Duration(now).Seconds()), Severity: i.SeverityAt(now)}
}

type trustResource struct {
	ScoreTotal int               `json:"score_total"`
	ScoreLevel string            `json:"score_level"`
	Breakdown  mintdir.Breakdown `json:"breakdown"`
	ComputedAt string            `json:"computed_at"`
}

type review struct {
	EventID   string `json:"event_id"`
	PubKey    string `json:"pubkey"`
	CreatedAt string `json:"created_at"`
	Rating    *int   `json:"rating"`
	Content   string `json:"content"`
}

func reviewOf(r mintdir.Review) review {
	return review{EventID: r.EventID, PubKey: pubkey.NPub(r.PubKey), CreatedAt: iso(r.CreatedAt), Rating: r.Rating, Content: r.Content}
}

type viewsResource struct {
	Views24h          int64   `json:"views_24h"`
	Views7d           int64   `json:"views_7d"`
	Views30d          int64   `json:"views_30d"`
	UniqueSessions30d int64   `json:"unique_sessions_30d"`
	ViewVelocity      float64 `json:"view_velocity"`
}

type featuresResource struct {
	SupportedNuts            []int    `json:"supported_nuts"`
	SupportsBolt11           *bool    `json:"supports_bolt11"`
	MinAmount                *uint64  `json:"min_amount"`
	MaxAmount                *uint64  `json:"max_amount"`
	HasTorEndpoint           bool     `json:"has_tor_endpoint"`
	HasMultipleURLs          bool     `json:"has_multiple_urls"`
	FeatureCompletenessScore *float64 `json:"feature_completeness_score"`
}

// featuresOf: what comes from the info is null until the first successful
// check; what comes from the URL list is always known.
func featuresOf(m *mintdir.Mint) featuresResource {
	out := featuresResource{HasMultipleURLs: len(m.URLs) > 1}
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

type submitResult struct {
	MintID  mintdir.ID `json:"mint_id"`
	Status  string     `json:"status"`
	Message string     `json:"message"`
}
