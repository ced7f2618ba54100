package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
)

// A blocked client IP gets 403 ip_blocked from every route: the services,
// /health and the relay; the client IP is the one ClientIPMiddleware found.
func TestBlockedIPs(t *testing.T) {
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
