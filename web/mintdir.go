package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// The directory's resources as its API answers them (only what the pages show).

type mintCore struct {
	MintID        string     `json:"mint_id"`
	CanonicalURL  string     `json:"canonical_url"`
	Name          *string    `json:"name"`
	IconURL       *string    `json:"icon_url"`
	Status        string     `json:"status"`
	OfflineSince  *time.Time `json:"offline_since"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	Uptime24h     *float64   `json:"uptime_24h"`
	Uptime7d      *float64   `json:"uptime_7d"`
	Uptime30d     *float64   `json:"uptime_30d"`
	Incidents7d   int        `json:"incidents_7d"`
	Incidents30d  int        `json:"incidents_30d"`
	TrustScore    int        `json:"trust_score"`
	TrustLevel    string     `json:"trust_level"`
}

// Title is how a mint is called: its name, else its URL.
func (m mintCore) Title() string {
	if m.Name != nil && strings.TrimSpace(*m.Name) != "" {
		return *m.Name
	}
	return strings.TrimPrefix(strings.TrimPrefix(m.CanonicalURL, "https://"), "http://")
}

type mintStatus struct {
	Status        string     `json:"status"`
	OfflineSince  *time.Time `json:"offline_since"`
	LastCheckedAt *time.Time `json:"last_checked_at"`
	CurrentRTTMs  *int       `json:"current_rtt_ms"`
	LastError     *string    `json:"last_error"`
}

type mintMetadata struct {
	Name            *string `json:"name"`
	Pubkey          *string `json:"pubkey"`
	Version         *string `json:"version"`
	Description     *string `json:"description"`
	DescriptionLong *string `json:"description_long"`
	Contact         []struct {
		Method string `json:"method"`
		Info   string `json:"info"`
	} `json:"contact"`
	Motd          *string    `json:"motd"`
	TosURL        *string    `json:"tos_url"`
	LastFetchedAt *time.Time `json:"last_fetched_at"`
	Keysets       []struct {
		ID          string  `json:"id"`
		Unit        string  `json:"unit"`
		Active      bool    `json:"active"`
		InputFeePpk *uint64 `json:"input_fee_ppk"`
	} `json:"keysets"`
}

type historyEntry struct {
	FetchedAt  time.Time                  `json:"fetched_at"`
	ChangeType string                     `json:"change_type"`
	Diff       map[string]json.RawMessage `json:"diff"`
	Version    *string                    `json:"version"`
}

// Fields lists the changed fields in order.
func (h historyEntry) Fields() []string {
	out := make([]string, 0, len(h.Diff))
	for k := range h.Diff {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type mintUptime struct {
	Window          string   `json:"window"`
	UptimePct       *float64 `json:"uptime_pct"`
	DowntimeSeconds int64    `json:"downtime_seconds"`
	AvgRTTMs        *int     `json:"avg_rtt_ms"`
	P95RTTMs        *int     `json:"p95_rtt_ms"`
	TotalChecks     int64    `json:"total_checks"`
	OKChecks        int64    `json:"ok_checks"`
}

type incident struct {
	StartedAt       time.Time  `json:"started_at"`
	ResolvedAt      *time.Time `json:"resolved_at"`
	DurationSeconds int64      `json:"duration_seconds"`
	Severity        string     `json:"severity"`
}

type part struct {
	Score float64 `json:"score"`
	Max   float64 `json:"max"`
}

type mintTrust struct {
	ScoreTotal int    `json:"score_total"`
	ScoreLevel string `json:"score_level"`
	Breakdown  struct {
		Uptime struct {
			part
			Uptime30d *float64 `json:"uptime_30d"`
		} `json:"uptime"`
		Speed struct {
			part
			AvgRTT7d *int `json:"avg_rtt_ms_7d"`
			SlowMs   int  `json:"slow_ms"`
		} `json:"speed"`
		Reviews struct {
			part
			RatedCount    int      `json:"rated_count"`
			AverageRating *float64 `json:"average_rating"`
		} `json:"reviews"`
		Identity struct {
			part
			HasPubkey      bool `json:"has_pubkey"`
			HasContact     bool `json:"has_contact"`
			HTTPS          bool `json:"https"`
			HasName        bool `json:"has_name"`
			HasDescription bool `json:"has_description"`
		} `json:"identity"`
		Penalties struct {
			part
			Min              float64 `json:"min"`
			Offline          bool    `json:"offline"`
			Degraded         bool    `json:"degraded"`
			Incidents30d     int     `json:"incidents_30d"`
			PubkeyChanged30d bool    `json:"pubkey_changed_30d"`
		} `json:"penalties"`
	} `json:"breakdown"`
	ComputedAt time.Time `json:"computed_at"`
}

type mintReviews struct {
	Reviews []struct {
		EventID   string    `json:"event_id"`
		PubKey    string    `json:"pubkey"`
		CreatedAt time.Time `json:"created_at"`
		Rating    *int      `json:"rating"`
		Content   string    `json:"content"`
	} `json:"reviews"`
	Summary struct {
		Count         int      `json:"count"`
		RatedCount    int      `json:"rated_count"`
		AverageRating *float64 `json:"average_rating"`
	} `json:"summary"`
}

type mintViews struct {
	Views24h          int64   `json:"views_24h"`
	Views7d           int64   `json:"views_7d"`
	Views30d          int64   `json:"views_30d"`
	UniqueSessions30d int64   `json:"unique_sessions_30d"`
	ViewVelocity      float64 `json:"view_velocity"`
}

type mintFeatures struct {
	SupportedNuts            []int    `json:"supported_nuts"`
	SupportsBolt11           *bool    `json:"supports_bolt11"`
	MinAmount                *uint64  `json:"min_amount"`
	MaxAmount                *uint64  `json:"max_amount"`
	HasTorEndpoint           bool     `json:"has_tor_endpoint"`
	HasMultipleURLs          bool     `json:"has_multiple_urls"`
	FeatureCompletenessScore *float64 `json:"feature_completeness_score"`
}

type mintURLs struct {
	URLs []struct {
		URL    string `json:"url"`
		Type   string `json:"type"`
		Active bool   `json:"active"`
	} `json:"urls"`
}

// --- the list ---

var statuses = []string{"online", "degraded", "unknown", "offline", "abandoned"}

const listPageSize = 50

type directoryView struct {
	Mount         string
	Mints         []mintCore
	Total, Offset int
	Status, Sort  string
	Statuses      []string
	Prev, Next    string
	Shown         string // "1–50"
	SubmitURL     string
	SubmitError   string
}

func (p *Pages) handleDirectory(w http.ResponseWriter, r *http.Request) {
	p.renderDirectory(w, r, http.StatusOK, "", nil)
}

// renderDirectory shows the list, with a failed submission's URL and error
// when there was one.
func (p *Pages) renderDirectory(w http.ResponseWriter, r *http.Request, status int, submitted string, submitErr *apiError) {
	q := r.URL.Query()
	v := directoryView{Mount: p.cfg.Mintdir.Mount, Status: q.Get("status"), Sort: q.Get("sort"), Statuses: statuses, SubmitURL: submitted}
	if v.Sort == "" {
		v.Sort = "trust"
	}
	v.Offset, _ = strconv.Atoi(q.Get("offset"))
	v.Offset = max(v.Offset, 0)
	api := url.Values{"sort": {v.Sort}, "limit": {strconv.Itoa(listPageSize)}, "offset": {strconv.Itoa(v.Offset)}}
	if v.Status != "" {
		api.Set("status", v.Status)
	}
	var list struct {
		Mints []mintCore `json:"mints"`
		Total int        `json:"total"`
	}
	if err := p.mintdir.get(r, "/mints?"+api.Encode(), &list); err != nil {
		p.fail(w, r, err)
		return
	}
	v.Mints, v.Total = list.Mints, list.Total
	page := func(offset int) string {
		u := url.Values{"offset": {strconv.Itoa(offset)}, "sort": {v.Sort}}
		if v.Status != "" {
			u.Set("status", v.Status)
		}
		return v.Mount + "/?" + u.Encode()
	}
	if v.Offset > 0 {
		v.Prev = page(max(0, v.Offset-listPageSize))
	}
	if v.Offset+len(v.Mints) < v.Total {
		v.Next = page(v.Offset + listPageSize)
	}
	if len(v.Mints) > 0 {
		v.Shown = strconv.Itoa(v.Offset+1) + "–" + strconv.Itoa(v.Offset+len(v.Mints))
	}
	if submitErr != nil {
		v.SubmitError = submitErr.Message
	}
	p.render(w, r, status, "mintdir", view{Title: "Cashu mint directory", Section: "mintdir", Main: v})
}

// handleSubmit takes the submit form (it works without JavaScript) through
// the API's POST /mints/submit, with its validation, SSRF guard and limit.
func (p *Pages) handleSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	mintURL := strings.TrimSpace(r.PostFormValue("mint_url"))
	var res struct {
		MintID string `json:"mint_id"`
		Status string `json:"status"`
	}
	_, err := p.mintdir.call(r, http.MethodPost, "/mints/submit", map[string]string{"mint_url": mintURL}, &res)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Code != "internal_error":
		if ae.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
		}
		p.renderDirectory(w, r, ae.Status, mintURL, ae)
	case err != nil:
		p.fail(w, r, err)
	default:
		http.Redirect(w, r, p.cfg.Mintdir.Mount+"/mint/"+url.PathEscape(res.MintID)+"?submitted="+url.QueryEscape(res.Status), http.StatusSeeOther)
	}
}

// --- a mint ---

type uptimeRow struct {
	Label string
	mintUptime
}

type mintView struct {
	Mount       string
	Core        mintCore
	Status      mintStatus
	Meta        mintMetadata
	History     []historyEntry
	Uptime      []uptimeRow
	Window      string
	Windows     []string
	Bucket      string
	UptimeChart uptimeChart
	RTTChart    rttChart
	Incidents   []incident
	Trust       mintTrust
	Reviews     mintReviews
	Views       mintViews
	Features    mintFeatures
	URLs        mintURLs
	Submitted   string // "queued" or "exists" after the submit form
	Icon        bool
}

func (p *Pages) handleMint(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	q := r.URL.Query()
	v := mintView{Mount: p.cfg.Mintdir.Mount, Window: q.Get("window"), Windows: []string{"24h", "7d", "30d"}}
	if v.Window == "" {
		v.Window = "24h"
	}
	if s := q.Get("submitted"); s == "queued" || s == "exists" {
		v.Submitted = s
	}
	base := "/mints/" + url.PathEscape(id)
	if err := p.mintdir.get(r, base, &v.Core); err != nil { // counts the view
		p.fail(w, r, err)
		return
	}
	if v.Core.MintID != id {
		// The record was merged into another one: show that one's page.
		http.Redirect(w, r, v.Mount+"/mint/"+url.PathEscape(v.Core.MintID)+"?window="+url.QueryEscape(v.Window), http.StatusMovedPermanently)
		return
	}
	var series struct {
		Bucket string  `json:"bucket"`
		Points []point `json:"points"`
	}
	var history struct {
		History []historyEntry `json:"history"`
	}
	var incidents struct {
		Incidents []incident `json:"incidents"`
	}
	gets := []struct {
		path string
		v    any
	}{
		{"/status", &v.Status},
		{"/metadata", &v.Meta},
		{"/metadata/history?limit=20", &history},
		{"/incidents?limit=20", &incidents},
		{"/trust", &v.Trust},
		{"/reviews?limit=50", &v.Reviews},
		{"/views", &v.Views},
		{"/features", &v.Features},
		{"/urls", &v.URLs},
		{"/uptime/timeseries?limit=500&window=" + url.QueryEscape(v.Window), &series},
	}
	for _, g := range gets {
		if err := p.mintdir.get(r, base+g.path, g.v); err != nil {
			p.fail(w, r, err)
			return
		}
	}
	// 30 days of hourly buckets are 721 points: more than one page.
	for page := series.Points; len(page) == 500; {
		var next struct {
			Points []point `json:"points"`
		}
		before := page[len(page)-1].Timestamp.UTC().Format(time.RFC3339)
		if err := p.mintdir.get(r, base+"/uptime/timeseries?limit=500&window="+url.QueryEscape(v.Window)+"&before="+url.QueryEscape(before), &next); err != nil {
			p.fail(w, r, err)
			return
		}
		series.Points = append(series.Points, next.Points...)
		page = next.Points
	}
	for _, win := range v.Windows {
		var u mintUptime
		if err := p.mintdir.get(r, base+"/uptime?window="+win, &u); err != nil {
			p.fail(w, r, err)
			return
		}
		v.Uptime = append(v.Uptime, uptimeRow{Label: windowWords(win), mintUptime: u})
	}
	bucket := map[string]time.Duration{"5m": 5 * time.Minute, "15m": 15 * time.Minute, "1h": time.Hour}[series.Bucket]
	v.Bucket = duration(bucket)
	v.UptimeChart = newUptimeChart(series.Points, v.Window, bucket)
	v.RTTChart = newRTTChart(series.Points, v.Window, bucket)
	v.History, v.Incidents = history.History, incidents.Incidents
	v.Icon = v.Core.IconURL != nil
	p.render(w, r, http.StatusOK, "mint", view{Title: v.Core.Title() + " · mint directory", Section: "mintdir", Main: v})
}
