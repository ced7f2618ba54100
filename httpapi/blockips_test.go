package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
)

// A blocked client IP gets 403 ip_blocked from every route: the services,
// /health and the relay; the client IP is the one ClientIPMiddleware found.
func TestBlockedIPs(t *testing.T) {
	t.Parallel()
	svc := chi.NewRouter()
	svc.Get("/x", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	h := New(Config{
		Relay:          http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "relay") }),
		Services:       []Service{{Name: "svc", Mount: "/svc", Routes: svc}},
		TrustedProxies: []string{"10.0.0.0/8"},
		BlockedIP:      func(ip string) bool { return ip == "198.51.100.7" },
		Log:            quiet,
	})
	do := func(path, remote, xff string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = remote
		r.Header.Set("Accept", "application/nostr+json")
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, path := range []string{"/svc/x", "/health", "/", "/nothing"} {
		for _, from := range [][2]string{{"198.51.100.7:1", ""}, {"10.0.0.1:1", "198.51.100.7"}} {
			w := do(path, from[0], from[1])
			var body ErrorBody
			if w.Code != 403 || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Error != "ip_blocked" || body.Message == "" {
				t.Errorf("%s from %v: %d %s, want 403 ip_blocked", path, from, w.Code, w.Body)
			}
		}
	}
	if w := do("/svc/x", "198.51.100.8:1", ""); w.Code != 200 {
		t.Errorf("another address: %d", w.Code)
	}
	// X-Forwarded-For from outside the trusted proxies is not believed,
	// neither to block nor to escape a block.
	if w := do("/svc/x", "203.0.113.1:1", "198.51.100.7"); w.Code != 200 {
		t.Errorf("a spoofed header blocked a client: %d", w.Code)
	}
	if w := do("/svc/x", "198.51.100.7:1", "203.0.113.1"); w.Code != 403 {
		t.Errorf("a spoofed header escaped a block: %d", w.Code)
	}
}

// Answers the root gives before any service's routes see the request — a
// blocked client IP's 403, a method chi does not know at all (405), the
// root's own 405 — are observed too, once each, as answers of the service whose mount the path
// is under ("outpost" for the rest), as every other answer is.
func TestRefusalsAreObserved(t *testing.T) {
	t.Parallel()
	svc := chi.NewRouter()
	svc.Get("/x", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	svc.MethodNotAllowed(MethodNotAllowed)
	var mu sync.Mutex
	var seen []string
	observe := func(service, mount string) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				mu.Lock()
				seen = append(seen, fmt.Sprint(service, " ", rec.Code))
				mu.Unlock()
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
			})
		}
	}
	h := New(Config{
		Relay:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "relay") }),
		Services:  []Service{{Name: "svc", Mount: "/svc", Routes: svc}},
		BlockedIP: func(ip string) bool { return ip == "198.51.100.7" },
		Log:       quiet,
		Observe:   observe,
	})
	for _, c := range []struct {
		method, path, from string
		want               []string
	}{
		{"GET", "/svc/x", "198.51.100.7:1", []string{"svc 403"}},
		{"GET", "/svc/nothing", "198.51.100.7:1", []string{"svc 403"}},
		{"GET", "/health", "198.51.100.7:1", []string{"outpost 403"}},
		{"GET", "/", "198.51.100.7:1", []string{"outpost 403"}},
		{"PROPFIND", "/svc/x", "203.0.113.1:1", []string{"svc 405"}},
		{"BREW", "/", "203.0.113.1:1", []string{"outpost 405"}},
		{"PROPFIND", "/svc/x", "198.51.100.7:1", []string{"svc 403"}},
		{"POST", "/svc/x", "203.0.113.1:1", []string{"svc 405"}}, // known method, refused by the service's router
		{"GET", "/svc/x", "203.0.113.1:1", []string{"svc 200"}},
		{"POST", "/health", "203.0.113.1:1", []string{"outpost 405"}}, // a known method, refused by the root's router
		{"GET", "/", "203.0.113.1:1", nil},                            // the relay is no REST service
	} {
		seen = nil
		r := httptest.NewRequest(c.method, c.path, nil)
		r.RemoteAddr = c.from
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if !slices.Equal(seen, c.want) {
			t.Errorf("%s %s from %s: answered %d, observed as %q, want %q", c.method, c.path, c.from, w.Code, seen, c.want)
		}
	}
}
