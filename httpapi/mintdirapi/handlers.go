package mintdirapi

import (
	_ "embed"
	"net/http"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/mintdir/resource"
)

//go:embed openapi.json
var openAPI []byte

// mintHandler answers for one resolved mint.
type mintHandler func(r *http.Request, m *mintdir.Mint) (any, error)

func byID(d *mintdir.Directory, fn mintHandler) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		m, err := d.Get(r.Context(), httpapi.PathParam(r, "mint_id"))
		return answer(w, r, m, err, fn)
	})
}

func byURL(d *mintdir.Directory, fn mintHandler) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		u := strings.TrimSpace(r.URL.Query().Get("url"))
		if u == "" {
			return outpost.Errorf(outpost.Invalid, "missing_url", "the url query parameter (the mint's URL) is required").With("field", "url")
		}
		m, err := d.GetByURL(r.Context(), u)
		return answer(w, r, m, err, fn)
	})
}

func answer(w http.ResponseWriter, r *http.Request, m *mintdir.Mint, err error, fn mintHandler) error {
	if err != nil {
		return err
	}
	v, err := fn(r, m)
	if err != nil {
		return err
	}
	return httpapi.Encode(w, http.StatusOK, v)
}

// --- per-mint resources ---

func handleCore(d *mintdir.Directory) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		if r.Method != http.MethodHead { // a monitor's HEAD is no one looking at the mint
			d.CountView(m, httpapi.ClientIP(r), r.UserAgent())
		}
		return resource.MintOf(m), nil
	}
}

func handleURLs() mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) { return resource.URLsOf(m), nil }
}

func handleMetadata(d *mintdir.Directory) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		meta, info, _, err := d.Metadata(r.Context(), m)
		return resource.MetadataOf(m, meta, info), err
	}
}

func handleHistory(d *mintdir.Directory) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		page, err := paging.Parse(r)
		if err != nil {
			return nil, err
		}
		entries, err := d.History(r.Context(), m, page.Before, page.Limit)
		out := resource.History{History: make([]resource.HistoryEntry, len(entries))}
		for i, e := range entries {
			out.History[i] = resource.HistoryEntryOf(e)
		}
		return out, err
	}
}

func handleStatus(d *mintdir.Directory) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		vantages, err := d.Vantages(r.Context(), m)
		return resource.StatusOf(m, vantages), err
	}
}

func handleUptime(d *mintdir.Directory) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		w, err := mintdir.ParseWindow(r.URL.Query().Get("window"))
		if err != nil {
			return nil, err
		}
		u, err := d.Uptime(r.Context(), m, w)
		return resource.UptimeOf(w, u), err
	}
}

func handleTimeseries(d *mintdir.Directory) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		q := r.URL.Query()
		w, err := mintdir.ParseWindow(q.Get("window"))
		if err != nil {
			return nil, err
		}
		bucket, err := mintdir.ParseBucket(q.Get("bucket"), w)
		if err != nil {
			return nil, err
		}
		page, err := paging.Parse(r)
		if err != nil {
			return nil, err
		}
		pts, err := d.Timeseries(r.Context(), m, w, bucket)
		out := resource.Timeseries{Window: w.Name, Bucket: bucketName(bucket), Points: make([]resource.Point, 0, min(len(pts), page.Limit))}
		for _, p := range pts {
			if len(out.Points) == page.Limit {
				break
			}
			if page.Before.IsZero() || p.Timestamp.Before(page.Before) {
				out.Points = append(out.Points, resource.PointOf(p))
			}
		}
		return out, err
	}
}

func bucketName(b time.Duration) string {
	switch b {
	case 5 * time.Minute:
		return "5m"
	case 15 * time.Minute:
		return "15m"
	}
	return "1h"
}

func handleIncidents(d *mintdir.Directory, now func() time.Time) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		page, err := paging.Parse(r)
		if err != nil {
			return nil, err
		}
		incs, err := d.Incidents(r.Context(), m, page.Before, page.Limit)
		out := resource.Incidents{Incidents: make([]resource.Incident, len(incs))}
		t := now()
		for i, inc := range incs {
			out.Incidents[i] = resource.IncidentOf(inc, t)
		}
		return out, err
	}
}

func handleTrust() mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		return resource.TrustOf(m), nil
	}
}

func handleReviews(d *mintdir.Directory, follows func(viewer, author string) bool) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		page, err := paging.Parse(r)
		if err != nil {
			return nil, err
		}
		viewer, err := viewerParam(r)
		if err != nil {
			return nil, err
		}
		reviews, sum, err := d.Reviews(r.Context(), m, page.Before, page.Limit)
		out := resource.Reviews{Reviews: make([]resource.Review, len(reviews)), Summary: sum}
		for i, rv := range reviews {
			out.Reviews[i] = resource.ReviewOf(rv)
		}
		if viewer != "" {
			markFollowed(&out, viewer, follows)
		}
		return out, err
	}
}

func handleViews(d *mintdir.Directory) mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) {
		v, err := d.Views(r.Context(), m)
		return resource.ViewsOf(v), err
	}
}

func handleFeatures() mintHandler {
	return func(r *http.Request, m *mintdir.Mint) (any, error) { return resource.FeaturesOf(m), nil }
}

// --- paging ---

// Paged like every list (docs/mintdir.md): 50 entries by default, 500 at
// most; per-mint lists newest first with ?before=, the catalogue with ?offset=.
var (
	paging     = httpapi.Paging{Default: 50, Max: 500, Cursor: httpapi.Before}
	listPaging = httpapi.Paging{Default: 50, Max: 500, Cursor: httpapi.Offset}
)

// --- the catalogue ---

var sorts = map[string]bool{"trust": true, "uptime": true, "name": true}

func handleList(d *mintdir.Directory) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		o := mintdir.ListOptions{Status: q.Get("status"), Sort: q.Get("sort")}
		if o.Sort == "" {
			o.Sort = "trust"
		}
		if o.Status != "" && !isStatus(o.Status) {
			return outpost.Errorf(outpost.Invalid, "invalid_status", "status must be one of %s", strings.Join(mintdir.Statuses, ", ")).With("field", "status")
		}
		if !sorts[o.Sort] {
			return outpost.Errorf(outpost.Invalid, "invalid_sort", "sort must be trust, uptime or name").With("field", "sort")
		}
		page, err := listPaging.Parse(r)
		if err != nil {
			return err
		}
		o.Limit, o.Offset = page.Limit, page.Offset
		mints, total, err := d.List(r.Context(), o)
		if err != nil {
			return err
		}
		out := resource.MintList{Mints: make([]resource.Mint, len(mints)), Total: total, Limit: o.Limit, Offset: o.Offset}
		for i, m := range mints {
			out.Mints[i] = resource.MintOf(m)
		}
		return httpapi.Encode(w, http.StatusOK, out)
	})
}

func isStatus(s string) bool {
	for _, st := range mintdir.Statuses {
		if s == st {
			return true
		}
	}
	return false
}

type submitRequest struct {
	MintURL string `json:"mint_url"`
}

func (q *submitRequest) Valid() error {
	if strings.TrimSpace(q.MintURL) == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_mint_url", "mint_url is required").With("field", "mint_url")
	}
	return nil
}

func handleSubmit(d *mintdir.Directory) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[submitRequest](w, r)
		if err != nil {
			return err
		}
		res, err := d.Submit(r.Context(), q.MintURL)
		if err != nil {
			return err
		}
		if res.Exists {
			return httpapi.Encode(w, http.StatusOK, resource.Submitted{MintID: res.ID, Status: "exists", Message: "this mint is already in the directory"})
		}
		return httpapi.Encode(w, http.StatusAccepted, resource.Submitted{MintID: res.ID, Status: "queued", Message: "the mint was added; its first check is running now"})
	})
}

// --- service ---

func handleStats(d *mintdir.Directory) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		s, err := d.Stats(r.Context())
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, s)
	})
}
