// Package apitest is a test client for outpost's REST services: every
// response it receives is validated against the service's own OpenAPI
// document, and it can tell which documented operations a test never reached.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Client calls one service mounted at base (server URL + mount path).
type Client struct {
	t      testing.TB
	base   string
	doc    *openapi3.T
	router routers.Router
	HTTP   *http.Client

	mu      sync.Mutex
	reached map[string]bool // "METHOD /path" of the document
}

// New loads spec (the service's openapi.json) and returns a client for base.
func New(t testing.TB, base string, spec []byte) *Client {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		t.Fatalf("openapi: load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi: the document is invalid: %v", err)
	}
	doc.Servers = nil // we route on paths relative to the mount
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("openapi: router: %v", err)
	}
	return &Client{t: t, base: strings.TrimSuffix(base, "/"), doc: doc, router: router,
		HTTP: &http.Client{Timeout: 10 * time.Second}, reached: map[string]bool{}}
}

// Response is a validated response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it cannot.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body into a generic map.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// ErrorCode is the "error" field of an error body.
func (r *Response) ErrorCode() string {
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(r.Body, &e)
	return e.Error
}

// Do sends a request (body: nil, []byte/string sent as is, or a value sent as
// JSON; headers as name, value pairs) and validates the response.
func (c *Client) Do(method, path string, body any, headers ...string) *Response {
	c.t.Helper()
	r, raw := c.send(method, path, body, headers...)
	c.validate(method, path, raw, r)
	return r
}

// send sends a request and returns the response and the body it sent.
func (c *Client) send(method, path string, body any, headers ...string) (*Response, []byte) {
	c.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		raw, _ = json.Marshal(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(raw))
	if err != nil {
		c.t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, raw
}

func (c *Client) validate(method, path string, reqBody []byte, resp *Response) {
	c.t.Helper()
	u, _ := url.Parse("http://service" + path)
	// HEAD is documented once, as GET: it answers the same without a body.
	routeMethod := method
	if method == http.MethodHead {
		routeMethod = http.MethodGet
	}
	req, _ := http.NewRequest(routeMethod, u.String(), bytes.NewReader(reqBody))
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if resp.Status == http.StatusNotFound || resp.Status == http.StatusMethodNotAllowed {
			return // an undocumented route that the service also refuses
		}
		c.t.Errorf("openapi: %s %s answered %d but is not in the document: %v", method, path, resp.Status, err)
		return
	}
	c.mu.Lock()
	c.reached[routeMethod+" "+route.Path] = true
	c.mu.Unlock()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.Status,
		Header:                 resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
			ExcludeResponseBody: method == http.MethodHead},
	}
	in.SetBodyBytes(resp.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		c.t.Errorf("openapi: %s %s → %d does not match the document:\n%v\nbody: %.500s", method, path, resp.Status, err, resp.Body)
	}
}

// AssertAllReached fails the test for every documented operation it never called.
func (c *Client) AssertAllReached() {
	c.t.Helper()
	var missing []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			if !c.reached[method+" "+path] {
				missing = append(missing, method+" "+path)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		c.t.Errorf("documented operations never exercised: %v", missing)
	}
}

// An NDJSON answer is checked as the array of its lines, which is how a
// document describes one (its schema is an array of what a line may be).
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		lines := []any{}
		d := json.NewDecoder(body)
		for {
			var v any
			if err := d.Decode(&v); err == io.EOF {
				return lines, nil
			} else if err != nil {
				return nil, err
			}
			lines = append(lines, v)
		}
	})
}
