package web

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/mintdir/resource"
)

// fields lists a history entry's changed fields in order.
func fields(diff map[string]mintdir.Change) []string {
	out := make([]string, 0, len(diff))
	for k := range diff {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// --- the list ---

const listPageSize = 50

type directoryView struct {
	Mount         string
	Mints         []resource.Mint
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
	v := directoryView{Mount: p.cfg.Mintdir.Mount, Status: q.Get("status"), Sort: q.Get("sort"), Statuses: mintdir.Statuses, SubmitURL: submitted}
	if v.Sort == "" {
		v.Sort = "trust"
	}
	v.Offset, _ = strconv.Atoi(q.Get("offset"))
	v.Offset = max(v.Offset, 0)
	api := url.Values{"sort": {v.Sort}, "limit": {strconv.Itoa(listPageSize)}, "offset": {strconv.Itoa(v.Offset)}}
	if v.Status != "" {
		api.Set("status", v.Status)
	}
	var list resource.MintList
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
		v.SubmitError = submitErr.Body.Message
	}
	p.render(w, r, status, "mintdir", view{Title: "Cashu mint directory", Section: "mintdir", Main: v})
}

// handleSubmit takes the submit form (it works without JavaScript) through
// the API's POST /mints/submit, with its validation, SSRF guard and limit.
func (p *Pages) handleSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	mintURL := strings.TrimSpace(r.PostFormValue("mint_url"))
	var res resource.Submitted
	_, err := p.mintdir.call(r, http.MethodPost, "/mints/submit", map[string]string{"mint_url": mintURL}, &res)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Body.Error != "internal_error":
		if ae.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
		}
		p.renderDirectory(w, r, ae.Status, mintURL, ae)
	case err != nil:
		p.fail(w, r, err)
	default:
		http.Redirect(w, r, p.cfg.Mintdir.Mount+"/mint/"+url.PathEscape(res.MintID.String())+"?submitted="+url.QueryEscape(res.Status), http.StatusSeeOther)
	}
}

// --- a mint ---

type uptimeRow struct {
	Label string
	resource.Uptime
}

type mintView struct {
	Mount       string
	Core        resource.Mint
	Status      resource.Status
	Meta        resource.Metadata
	History     []resource.HistoryEntry
	Uptime      []uptimeRow
	Window      string
	Windows     []string
	Bucket      string
	UptimeChart uptimeChart
	RTTChart    rttChart
	Incidents   []resource.Incident
	Audits      []audit.Entry
	AuditChart  auditChart
	Trust       resource.Trust
	Reviews     resource.Reviews
	Views       resource.Views
	Features    resource.Features
	URLs        resource.URLs
	Submitted   string // "queued" or "exists" after the submit form
	Icon        bool
	SelfMonitor string // this outpost's npub among the vantages, to name it in incidents
	FaucetMount string // whose session (this tab's sign-in) names the viewer of "reviewed by people you follow"
}

func (p *Pages) handleMint(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	q := r.URL.Query()
	v := mintView{Mount: p.cfg.Mintdir.Mount, Window: q.Get("window"), Windows: []string{"24h", "7d", "30d"}, FaucetMount: p.cfg.Faucet.Mount}
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
	if v.Core.MintID.String() != id {
		// The record was merged into another one: show that one's page.
		http.Redirect(w, r, v.Mount+"/mint/"+url.PathEscape(v.Core.MintID.String())+"?window="+url.QueryEscape(v.Window), http.StatusMovedPermanently)
		return
	}
	var series resource.Timeseries
	var history resource.History
	var incidents resource.Incidents
	var audits struct {
		Audits []audit.Entry `json:"audits"`
	}
	gets := []into{
		{base + "/audits?limit=50", &audits},
		{base + "/status", &v.Status},
		{base + "/metadata", &v.Meta},
		{base + "/metadata/history?limit=20", &history},
		{base + "/incidents?limit=20", &incidents},
		{base + "/trust", &v.Trust},
		{base + "/reviews?limit=50", &v.Reviews},
		{base + "/views", &v.Views},
		{base + "/features", &v.Features},
		{base + "/urls", &v.URLs},
		{base + "/uptime/timeseries?limit=500&window=" + url.QueryEscape(v.Window), &series},
	}
	if err := p.mintdir.getAll(r, gets...); err != nil {
		p.fail(w, r, err)
		return
	}
	// 30 days of hourly buckets are 721 points: more than one page.
	for page := series.Points; len(page) == 500; {
		var next resource.Timeseries
		before := page[len(page)-1].Timestamp.UTC().Format(time.RFC3339)
		if err := p.mintdir.get(r, base+"/uptime/timeseries?limit=500&window="+url.QueryEscape(v.Window)+"&before="+url.QueryEscape(before), &next); err != nil {
			p.fail(w, r, err)
			return
		}
		series.Points = append(series.Points, next.Points...)
		page = next.Points
	}
	for _, win := range v.Windows {
		var u resource.Uptime
		if err := p.mintdir.get(r, base+"/uptime?window="+win, &u); err != nil {
			p.fail(w, r, err)
			return
		}
		v.Uptime = append(v.Uptime, uptimeRow{Label: windowWords(win), Uptime: u})
	}
	bucket := map[string]time.Duration{"5m": 5 * time.Minute, "15m": 15 * time.Minute, "1h": time.Hour}[series.Bucket]
	v.Bucket = duration(bucket)
	v.UptimeChart = newUptimeChart(series.Points, v.Window, bucket)
	v.RTTChart = newRTTChart(series.Points, v.Window, bucket)
	v.History, v.Incidents, v.Audits = history.History, incidents.Incidents, audits.Audits
	v.AuditChart = newAuditChart(audits.Audits)
	v.Icon = v.Core.IconURL != nil
	for _, vt := range v.Status.Vantages {
		if vt.Self {
			v.SelfMonitor = vt.Monitor
		}
	}
	p.render(w, r, http.StatusOK, "mint", view{Title: v.Core.Title() + " · mint directory", Section: "mintdir", Script: "mint.js", Main: v})
}
