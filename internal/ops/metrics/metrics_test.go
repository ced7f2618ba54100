package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestEventAnsweredLabels(t *testing.T) {
	m := New("test", "abc")
	for _, c := range []struct {
		ok      bool
		reason  string
		outcome string
		prefix  string
	}{
		{true, "", "accepted", "none"},
		{true, "duplicate: already have this event", "duplicate", "duplicate"},
		{false, "blocked: you are banned from this relay: spam", "refused", "blocked"},
		{false, "rate-limited: too many events from this key; try again in 3s", "refused", "rate-limited"},
		{false, "auth-required: this event is protected", "refused", "auth-required"},
		{false, "npub1spammer: whatever a policy wrote", "refused", "other"}, // never the text itself
		{false, "no prefix at all", "refused", "other"},
	} {
		before := testutil.ToFloat64(m.relayEvents.WithLabelValues(c.outcome, c.prefix))
		m.EventAnswered(c.ok, c.reason, time.Millisecond)
		if got := testutil.ToFloat64(m.relayEvents.WithLabelValues(c.outcome, c.prefix)); got != before+1 {
			t.Errorf("%v %q: outpost_relay_events_total{outcome=%q,reason=%q} went from %v to %v", c.ok, c.reason, c.outcome, c.prefix, before, got)
		}
	}
	if n := testutil.CollectAndCount(m.relayEvents); n != 6 {
		t.Errorf("%d series, want 6 (the odd reasons share \"other\")", n)
	}
}

// Requests are labelled by the route pattern under the mount, whether the
// service's router or a middleware in front of it (the rate limit)
// answered; a path no route has is "unmatched", whatever it is.
func TestHTTPRoutes(t *testing.T) {
	m := New("test", "abc")
	svc := chi.NewRouter()
	svc.Get("/blocked/pubkeys/{pubkey}", func(w http.ResponseWriter, r *http.Request) {})
	refuse := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Refuse") != "" {
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	root := chi.NewRouter()
	root.With(m.HTTP("banlist", "/banlist"), refuse).Mount("/banlist", svc)

	for _, c := range []struct {
		path, method string
		refuse       bool
		route, code  string
	}{
		{"/banlist/blocked/pubkeys/abc", "GET", false, "/blocked/pubkeys/{pubkey}", "200"},
		{"/banlist/blocked/pubkeys/def", "GET", true, "/blocked/pubkeys/{pubkey}", "429"},
		{"/banlist/wp-admin/setup.php", "GET", false, "unmatched", "404"},
		{"/banlist/blocked/pubkeys/abc", "TRACE", false, "/blocked/pubkeys/{pubkey}", "405"},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.refuse {
			req.Header.Set("X-Refuse", "1")
		}
		root.ServeHTTP(httptest.NewRecorder(), req)
		method := c.method
		if method == "TRACE" {
			method = "other"
		}
		if got := testutil.ToFloat64(m.httpRequests.WithLabelValues("banlist", c.route, method, c.code)); got != 1 {
			t.Errorf("%s %s: outpost_http_requests_total{route=%q,code=%q} = %v, want 1", c.method, c.path, c.route, c.code, got)
		}
	}

	// A method chi does not know is answered by the root router before any
	// route is matched (httpapi observes that answer at the root): it is
	// labelled with the route its path has, and the method "other".
	outer := chi.NewRouter()
	outer.Use(m.HTTP("mintdir", "/mintdir"))
	outer.Mount("/mintdir", svc)
	outer.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("PROPFIND", "/mintdir/blocked/pubkeys/abc", nil))
	if got := testutil.ToFloat64(m.httpRequests.WithLabelValues("mintdir", "/blocked/pubkeys/{pubkey}", "other", "405")); got != 1 {
		t.Errorf("PROPFIND: outpost_http_requests_total{route=\"/blocked/pubkeys/{pubkey}\",method=\"other\",code=\"405\"} = %v, want 1", got)
	}
}

// A service without a health status (one this node does not run) has no
// series, and the scrape goes on for the others.
func TestWatchHealthWithoutStatus(t *testing.T) {
	m := New("test", "abc")
	m.WatchHealth([]ServiceStatus{{Service: "faucet"},
		{Service: "banlist", Status: func(context.Context) string { return "degraded" }}})
	got, err := testutil.GatherAndCount(m.reg, "outpost_service_health")
	if err != nil || got != 3 {
		t.Fatalf("%d series (%v), want 3: the banlist's ok, degraded and down", got, err)
	}
}
