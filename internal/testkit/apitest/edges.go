package apitest

import (
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/outpost-relay/outpost/httpapi"
)

// Operation is one documented operation.
type Operation struct {
	Method, Path string // Path as documented: /mints/{mint_id}
	Op           *openapi3.Operation
}

// Operations lists the document's operations, sorted by path and method.
func (c *Client) Operations() []Operation {
	var ops []Operation
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, Operation{Method: method, Path: path, Op: op})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		return ops[i].Path+" "+ops[i].Method < ops[j].Path+" "+ops[j].Method
	})
	return ops
}

// secured: the operation needs credentials (no empty security requirement).
func (c *Client) secured(op *openapi3.Operation) bool {
	sec := c.doc.Security
	if op.Security != nil {
		sec = *op.Security
	}
	return len(sec) > 0 && !slices.ContainsFunc(sec, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 })
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// Fill puts params into a documented path; the test fails for a missing one.
func (c *Client) Fill(path string, params map[string]string) string {
	c.t.Helper()
	return pathParam.ReplaceAllStringFunc(path, func(m string) string {
		v, ok := params[m[1:len(m)-1]]
		if !ok {
			c.t.Fatalf("apitest: no value for %s in %s", m, path)
		}
		return v
	})
}

// AssertCommonStatuses fails for every operation that leaves out a status
// that the shared middleware can answer for it: 400 (a malformed query
// string), 403 (ip_blocked: an address the ban list blocks), 429 (the
// per-client rate limit applies to every route) and 500 everywhere; 408
// and 413 where there is a request body; 401 where credentials are
// required; 507 (a full disk) for every method but GET.
func (c *Client) AssertCommonStatuses() {
	c.t.Helper()
	for _, o := range c.Operations() {
		want := []string{"400", "403", "429", "500"}
		if o.Op.RequestBody != nil {
			want = append(want, "408", "413")
		}
		if c.secured(o.Op) {
			want = append(want, "401")
		}
		if o.Method != "get" && o.Method != "GET" {
			want = append(want, "507")
		}
		for _, st := range want {
			if o.Op.Responses.Value(st) == nil {
				c.t.Errorf("openapi: %s %s does not document %s", strings.ToUpper(o.Method), o.Path, st)
			}
		}
	}
}

// CheckEdges calls every documented operation the ways any operation may be
// called, with headers (credentials) and path parameters from params, and
// fails for an answer the contract does not give (every answer is also
// validated against the document by Do):
//   - HEAD for a GET: the GET's status and content type, no body;
//   - a method the path does not have: 405, the JSON error, and an Allow
//     header naming every documented method of the path;
//   - a malformed query string: 400 invalid_query;
//   - without credentials where they are required: 401;
//   - a request body with trailing data: 400 invalid_json, and one larger
//     than httpapi.MaxBodyBytes: 413 (401 where the credentials given are
//     not the kind the operation takes).
//
// Reached operations are not marked: the happy paths are the tests' own.
func (c *Client) CheckEdges(params map[string]string, headers ...string) {
	c.t.Helper()
	methods := map[string][]string{}
	for _, o := range c.Operations() {
		methods[o.Path] = append(methods[o.Path], strings.ToUpper(o.Method))
	}
	for _, o := range c.Operations() {
		method, path := strings.ToUpper(o.Method), c.Fill(o.Path, params)
		name := method + " " + o.Path
		if method == http.MethodGet {
			c.checkHead(o.Path, path, headers)
		}
		if !slices.Contains(methods[o.Path], http.MethodPut) {
			c.checkNotAllowed(o.Path, path, methods[o.Path], headers)
		}
		if r := c.Do(method, path+"?x=%zz", nil, headers...); r.Status != http.StatusBadRequest || r.ErrorCode() != "invalid_query" {
			c.t.Errorf("%s?x=%%zz: %d %s, want 400 invalid_query", name, r.Status, r.Body)
		}
		if c.secured(o.Op) {
			if r := c.Do(method, path, nil); r.Status != http.StatusUnauthorized {
				c.t.Errorf("%s without credentials: %d %s, want 401", name, r.Status, r.Body)
			}
		}
		if o.Op.RequestBody != nil {
			c.checkBodies(name, method, path, maxBody(o.Op), headers)
		}
	}
}

// checkHead: HEAD answers as GET does, without a body.
func (c *Client) checkHead(pattern, path string, headers []string) {
	get, head := c.Do(http.MethodGet, path, nil, headers...), c.Do(http.MethodHead, path, nil, headers...)
	if head.Status != get.Status || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") || len(head.Body) != 0 {
		c.t.Errorf("HEAD %s: %d %q %d bytes; GET: %d %q", pattern, head.Status, head.Header.Get("Content-Type"), len(head.Body), get.Status, get.Header.Get("Content-Type"))
	}
}

// checkNotAllowed: PUT, which the path does not have, is a JSON 405 whose
// Allow header names every documented method (and HEAD with GET).
func (c *Client) checkNotAllowed(pattern, path string, documented, headers []string) {
	r, _ := c.send(http.MethodPut, path, nil, headers...)
	allow := strings.Split(r.Header.Get("Allow"), ", ")
	for _, m := range documented {
		if !slices.Contains(allow, m) || (m == http.MethodGet && !slices.Contains(allow, http.MethodHead)) {
			c.t.Errorf("PUT %s: %d, Allow %q; want 405 allowing %v", pattern, r.Status, r.Header.Get("Allow"), documented)
		}
	}
	if r.Status != http.StatusMethodNotAllowed || r.ErrorCode() != "method_not_allowed" {
		c.t.Errorf("PUT %s: %d %s, want 405 method_not_allowed", pattern, r.Status, r.Body)
	}
}

// maxBody is the body size an operation takes: httpapi.MaxBodyBytes, or
// the x-max-body-bytes its document gives (a bulk upload).
func maxBody(op *openapi3.Operation) int {
	if n, ok := op.Extensions["x-max-body-bytes"].(float64); ok {
		return int(n)
	}
	return httpapi.MaxBodyBytes
}

// checkBodies: trailing data and an oversized body are refused (or 401
// where the credentials given are not the kind the operation takes).
func (c *Client) checkBodies(name, method, path string, limit int, headers []string) {
	for _, tt := range []struct {
		body   string
		status int
		code   string
	}{
		{`{}]`, http.StatusBadRequest, "invalid_json"},
		{`{"x":"` + strings.Repeat("x", limit) + `"}`, http.StatusRequestEntityTooLarge, "request_too_large"},
	} {
		r := c.Do(method, path, tt.body, headers...)
		if r.Status != tt.status && r.Status != http.StatusUnauthorized || r.Status == tt.status && r.ErrorCode() != tt.code {
			c.t.Errorf("%s with %.20q…: %d %s, want %d %s", name, tt.body, r.Status, r.Body, tt.status, tt.code)
		}
	}
}

// CheckRateLimited calls every operation once, each of which must answer a
// documented 429 with Retry-After: for a server whose per-client limit the
// test has used up.
func (c *Client) CheckRateLimited(params map[string]string, headers ...string) {
	c.t.Helper()
	for _, o := range c.Operations() {
		method := strings.ToUpper(o.Method)
		r := c.Do(method, c.Fill(o.Path, params), nil, headers...)
		if r.Status != http.StatusTooManyRequests || r.ErrorCode() != "rate_limit_exceeded" || r.Header.Get("Retry-After") == "" {
			c.t.Errorf("%s %s over the limit: %d %s %v", method, o.Path, r.Status, r.Body, r.Header)
		}
	}
}
