package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{outpost.Errorf(outpost.Invalid, "invalid_x", "x"), 400, "invalid_x"},
		{outpost.Errorf(outpost.Unauthorized, "unauthorized", "x"), 401, "unauthorized"},
		{outpost.Errorf(outpost.Forbidden, "forbidden", "x"), 403, "forbidden"},
		{outpost.Errorf(outpost.NotFound, "nope", "x"), 404, "nope"},
		{outpost.Errorf(outpost.Conflict, "c", "x"), 409, "c"},
		{outpost.Errorf(outpost.Gone, "g", "x"), 410, "g"},
		{outpost.Errorf(outpost.TooLarge, "t", "x"), 413, "t"},
		{outpost.Errorf(outpost.Unprocessable, "u", "x"), 422, "u"},
		{outpost.Errorf(outpost.BadGateway, "b", "x"), 502, "b"},
		{outpost.Errorf(outpost.Unavailable, "s", "x"), 503, "s"},
		{outpost.Errorf(outpost.TimedOut, "request_timeout", "x"), 408, "request_timeout"},
		{io.ErrUnexpectedEOF, 500, "internal_error"}, // internal causes are never shown
		{outpost.Errorf(outpost.Internal, "db_broke", "secret detail"), 500, "internal_error"},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		Error(w, httptest.NewRequest("GET", "/", nil), tt.err)
		var body ErrorBody
		json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != tt.status || body.Error != tt.code || body.Message == "" {
			t.Errorf("%v: got %d %s, want %d %s", tt.err, w.Code, w.Body, tt.status, tt.code)
		}
		if strings.Contains(w.Body.String(), "secret detail") || strings.Contains(w.Body.String(), "unexpected EOF") {
			t.Errorf("an internal cause leaked: %s", w.Body)
		}
	}
}

type req struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Tags  []string
}

func (r *req) Valid() error {
	if r.Name == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "name is required")
	}
	return nil
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body   string
		status int
		code   string
	}{
		{`{"name":"a","count":2,"extra":true}`, 200, ""}, // unknown fields are ignored
		{`{"name":"a","count":"2"}`, 400, "invalid_field"},
		{`{"name":"a","count":1.5}`, 400, "invalid_field"},
		{`{"name":"a","Tags":"x"}`, 400, "invalid_field"},
		{`{"name":`, 400, "invalid_json"},
		{``, 400, "invalid_json"},
		{`null`, 400, "invalid_request"}, // decodes to the zero value, which is not valid
		{`"text"`, 400, "invalid_json"},
		{`{"name":"a"}{"name":"b"}`, 400, "invalid_json"},
		{`{"name":"a"}]`, 400, "invalid_json"}, // json.Decoder.More is false before ] and }
		{`{"name":"a"}}`, 400, "invalid_json"},
		{`{"name":"a"} x`, 400, "invalid_json"},
		{`{"name":"a"},`, 400, "invalid_json"},
		{"{\"name\":\"a\"} \n\t", 200, ""},
		{`{"count":1}`, 400, "invalid_request"},
		{`{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, 413, "request_too_large"},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
		_, err := Decode[req](w, r)
		if err == nil {
			w.WriteHeader(200)
		} else {
			Error(w, r, err)
		}
		var body ErrorBody
		json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != tt.status || body.Error != tt.code {
			t.Errorf("%.40q: got %d %s, want %d %s", tt.body, w.Code, w.Body, tt.status, tt.code)
		}
	}
}

// The client IP is the socket peer unless the peer is a trusted proxy.
func TestClientIPAndRateLimit(t *testing.T) {
	t.Parallel()
	var now = time.Unix(1_700_000_000, 0)
	limiter := ratelimit.New(2, time.Minute, func() time.Time { return now })
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, ClientIP(r)) })
	do := func(h http.Handler, remote, xff string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	direct := ClientIPMiddleware(nil)(echo)
	if got := do(direct, "203.0.113.7:5555", "198.51.100.1").Body.String(); got != "203.0.113.7" {
		t.Errorf("untrusted X-Forwarded-For was believed: %s", got)
	}
	proxied := ClientIPMiddleware([]string{"10.0.0.0/8"})(echo)
	if got := do(proxied, "10.1.2.3:5555", "198.51.100.1, 10.9.9.9").Body.String(); got != "198.51.100.1" {
		t.Errorf("behind a trusted proxy: %s, want the first untrusted hop", got)
	}
	if got := do(proxied, "203.0.113.7:5555", "198.51.100.1").Body.String(); got != "203.0.113.7" {
		t.Errorf("a spoofed header from outside the proxy range was believed: %s", got)
	}
	// A request the proxy makes itself (a health check), or passes on with
	// only trusted hops, is the proxy's own: not an empty address that every
	// such request would share a rate-limit bucket under.
	for _, xff := range []string{"", "10.9.9.9", "unknown"} {
		if got := do(proxied, "10.1.2.3:5555", xff).Body.String(); got != "10.1.2.3" {
			t.Errorf("from a trusted proxy with X-Forwarded-For %q: %q, want the proxy's address", xff, got)
		}
	}

	limited := ClientIPMiddleware(nil)(RateLimit(limiter)(echo))
	do(limited, "203.0.113.7:1", "")
	do(limited, "203.0.113.7:2", "")
	w := do(limited, "203.0.113.7:3", "198.51.100.99") // a new XFF doesn't reset the limit
	var body ErrorBody
	json.Unmarshal(w.Body.Bytes(), &body)
	if w.Code != 429 || body.Error != "rate_limit_exceeded" || w.Header().Get("Retry-After") != "30" {
		t.Fatalf("over the limit: %d %s Retry-After=%q", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	if w := do(limited, "203.0.113.8:1", ""); w.Code != 200 {
		t.Fatalf("another client was limited: %d", w.Code)
	}
}

type testChecks struct {
	X int `json:"x"`
}

// testHealth is a service's health report with status and checks.
func testHealth(status string, x int) func(context.Context) outpost.Health[testChecks] {
	return func(context.Context) outpost.Health[testChecks] {
		h := outpost.NewHealth("1", testChecks{X: x})
		if status != outpost.HealthOK {
			h.Fail(status, "x is "+fmt.Sprint(x))
		}
		return h
	}
}

func TestRootHandler(t *testing.T) {
	t.Parallel()
	panics := chi.NewRouter()
	panics.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	h := New(Config{
		Relay: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "relay") }),
		Services: []Service{{Name: "svc", Mount: "/svc", Routes: panics,
			Health: ReportHealth(testHealth("degraded", 1))}},
		Log: quiet, Index: map[string]string{"name": "outpost"},
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string, hdr ...string) (*http.Response, string) { return do(t, "GET", srv.URL+path, hdr...) }
	if resp, body := get("/svc/boom"); resp.StatusCode != 500 || !strings.Contains(body, `"internal_error"`) {
		t.Errorf("panic: %d %s", resp.StatusCode, body)
	}
	if resp, body := get("/health"); resp.StatusCode != 200 || !strings.Contains(body, `"status":"degraded"`) || !strings.Contains(body, `"svc"`) {
		t.Errorf("health: %d %s", resp.StatusCode, body)
	}
	if _, body := get("/"); !strings.Contains(body, `"outpost"`) {
		t.Errorf("index: %s", body)
	}
	if _, body := get("/", "Accept", "application/nostr+json"); body != "relay" {
		t.Errorf("NIP-11 did not reach the relay: %s", body)
	}
	if resp, body := get("/nothing"); resp.StatusCode != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("unknown route: %d %s", resp.StatusCode, body)
	}
}

// A handler returns its error: client errors are answered as they are,
// anything else is a generic 500 logged to the logger of the request's
// context — the service's, when its router set one.
func TestHandleLogsToTheRequestsLogger(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	svcLog := slog.New(slog.NewTextHandler(&logs, nil)).With("service", "svc")
	routes := chi.NewRouter()
	routes.Use(Logger(svcLog))
	routes.Get("/bad", Handle(func(http.ResponseWriter, *http.Request) error {
		return outpost.Errorf(outpost.Invalid, "bad_thing", "a bad thing")
	}))
	routes.Get("/broken", Handle(func(http.ResponseWriter, *http.Request) error { return io.ErrUnexpectedEOF }))
	routes.Get("/ok", Handle(func(w http.ResponseWriter, _ *http.Request) error {
		return Encode(w, http.StatusCreated, map[string]int{"n": 1})
	}))
	routes.Get("/unencodable", Handle(func(w http.ResponseWriter, _ *http.Request) error {
		return Encode(w, http.StatusOK, map[string]any{"f": func() {}})
	}))
	h := New(Config{Relay: http.NotFoundHandler(), Log: quiet, Services: []Service{{Name: "svc", Mount: "/svc", Routes: routes}}})
	for _, tt := range []struct {
		path   string
		status int
		body   string
	}{
		{"/svc/bad", 400, `"bad_thing"`},
		{"/svc/broken", 500, `"internal_error"`},
		{"/svc/ok", 201, `{"n":1}`},
		{"/svc/unencodable", 500, `"internal_error"`},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", tt.path, nil))
		if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.body) {
			t.Errorf("%s: got %d %s, want %d %s", tt.path, w.Code, w.Body, tt.status, tt.body)
		}
	}
	if got := logs.String(); strings.Count(got, "request failed") != 2 || !strings.Contains(got, "service=svc") ||
		!strings.Contains(got, "path=/svc/broken") || strings.Contains(got, "bad_thing") {
		t.Errorf("logs:\n%s\nwant the two internal errors, with the service's logger, and no client error", got)
	}
}

// The root's health has the services' one shape, with each service's own
// /health body as a check; one service down takes the whole down (503).
func TestRootHealth(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		statuses []string
		want     string
		code     int
	}{
		{[]string{"ok", "ok"}, "ok", 200},
		{[]string{"ok", "degraded"}, "degraded", 200},
		{[]string{"degraded", "down"}, "down", 503},
	} {
		var services []Service
		for i, st := range tt.statuses {
			services = append(services, Service{Name: fmt.Sprint("s", i), Mount: fmt.Sprint("/s", i), Routes: http.NotFoundHandler(), Health: ReportHealth(testHealth(st, 7))})
		}
		w := httptest.NewRecorder()
		New(Config{Relay: http.NotFoundHandler(), Log: quiet, Services: services}).ServeHTTP(w, httptest.NewRequest("GET", "/health", nil))
		var body outpost.Health[map[string]outpost.Health[testChecks]]
		json.Unmarshal(w.Body.Bytes(), &body)
		if s1 := body.Checks["s1"]; w.Code != tt.code || body.Status != tt.want || body.Version != outpost.Version ||
			s1 != testHealth(tt.statuses[1], 7)(context.Background()) || (body.Reason == "") != (tt.want == "ok") {
			t.Errorf("%v: got %d %s, want %d %s", tt.statuses, w.Code, w.Body, tt.code, tt.want)
		}
		w = httptest.NewRecorder()
		ServeHealth(testHealth(tt.statuses[1], 0)).ServeHTTP(w, httptest.NewRequest("GET", "/health", nil))
		if wantCode := map[string]int{"down": 503}[tt.statuses[1]]; w.Code != max(wantCode, 200) {
			t.Errorf("a service's own /health when %s: %d", tt.statuses[1], w.Code)
		}
	}
}

// One service behind the root handler, as the three are mounted.
func methodsServer(t *testing.T) *httptest.Server {
	routes := chi.NewRouter()
	routes.NotFound(NotFound)
	routes.MethodNotAllowed(MethodNotAllowed)
	ok := Handle(func(w http.ResponseWriter, r *http.Request) error {
		return Encode(w, http.StatusOK, map[string]string{"id": PathParam(r, "id"), "q": r.URL.Query().Get("q")})
	})
	routes.Get("/things", ok)
	routes.Post("/things", ok)
	routes.Delete("/things/{id}", ok)
	routes.Route("/v1", func(r chi.Router) { r.Post("/submit", ok) })
	srv := httptest.NewServer(New(Config{Relay: http.NotFoundHandler(), Log: quiet,
		Services: []Service{{Name: "svc", Mount: "/svc", Routes: routes,
			Health: ReportHealth(testHealth("ok", 0))}}}))
	t.Cleanup(srv.Close)
	return srv
}

// do sends a request with headers as name, value pairs.
func do(t *testing.T, method, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// HEAD answers like GET, without the body; a method a path does not serve
// is 405 with the JSON body and Allow (RFC 9110 §15.5.6).
func TestMethods(t *testing.T) {
	t.Parallel()
	srv := methodsServer(t)
	for _, tt := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/svc/things", 200, ""},
		{"HEAD", "/svc/things", 200, ""},
		{"HEAD", "/health", 200, ""},
		{"PUT", "/svc/things", 405, "GET, HEAD, POST"},
		{"PATCH", "/svc/things/x", 405, "DELETE"},
		{"HEAD", "/svc/things/x", 405, "DELETE"},
		{"GET", "/svc/v1/submit", 405, "POST"},
		{"POST", "/health", 405, "GET, HEAD"},
		{"DELETE", "/svc/nothing", 404, ""},
	} {
		resp, body := do(t, tt.method, srv.URL+tt.path)
		if resp.StatusCode != tt.status || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Allow"), tt.status, tt.allow)
		}
		if tt.method == "HEAD" && tt.status == 200 {
			get, getBody := do(t, "GET", srv.URL+tt.path)
			if body != "" || resp.Header.Get("Content-Length") != get.Header.Get("Content-Length") ||
				resp.Header.Get("Content-Type") != get.Header.Get("Content-Type") || len(getBody) == 0 {
				t.Errorf("HEAD %s: body %q, headers %v; GET: %v", tt.path, body, resp.Header, get.Header)
			}
			continue
		}
		if tt.status >= 400 && tt.method != "HEAD" && !strings.Contains(body, `"error":"`) {
			t.Errorf("%s %s: not the JSON error: %s", tt.method, tt.path, body)
		}
	}
}

// A malformed escape in the query is our JSON 400 (r.URL.Query would drop
// the pair silently); one in the path is refused by net/http before any
// handler runs, with its own plain-text 400, as docs/configuration.md says.
func TestMalformedEscapes(t *testing.T) {
	t.Parallel()
	srv := methodsServer(t)
	for _, q := range []string{"q=%zz", "q=%", "%zz=1", "q=a;b"} {
		resp, body := do(t, "GET", srv.URL+"/svc/things?"+q)
		if resp.StatusCode != 400 || !strings.Contains(body, `"invalid_query"`) {
			t.Errorf("?%s: %d %s", q, resp.StatusCode, body)
		}
	}
	if resp, body := do(t, "GET", srv.URL+"/svc/things?q=a%20b"); resp.StatusCode != 200 || !strings.Contains(body, `"q":"a b"`) {
		t.Errorf("a good escape: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "DELETE", srv.URL+"/svc/things/a%2Fb%25"); resp.StatusCode != 200 || !strings.Contains(body, `"id":"a/b%"`) {
		t.Errorf("an escaped path value: %d %s", resp.StatusCode, body)
	}
	conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET /svc/things/%%zz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("a malformed path escape: %d %v; docs/configuration.md says net/http answers it in plain text", resp.StatusCode, resp.Header)
	}
}
