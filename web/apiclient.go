package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/httpapi"
)

// apiClient calls one service's REST handler in-process, as a client of its
// documented interface: the pages render what the API answers and show its
// errors, and whatever changes behind the API leaves them alone. Calls bypass
// the program-wide rate limit (a page view counts once) but not a service's
// own limits, such as the directory's submissions per hour.
type apiClient struct{ h http.Handler }

func (c apiClient) ok() bool { return c.h != nil }

// apiError is an error answer of a service: its status and JSON body.
type apiError struct {
	Status     int
	Body       httpapi.ErrorBody
	RetryAfter int // seconds, from Retry-After
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Body.Error, e.Body.Message)
}

// get decodes GET path (relative to the service's mount) into v.
func (c apiClient) get(r *http.Request, path string, v any) error {
	_, err := c.call(r, http.MethodGet, path, nil, v)
	return err
}

// into is a GET path and the value its answer is decoded into.
type into struct {
	path string
	v    any
}

// getAll decodes each GET in turn, stopping at the first error.
func (c apiClient) getAll(r *http.Request, gets ...into) error {
	for _, g := range gets {
		if err := c.get(r, g.path, g.v); err != nil {
			return err
		}
	}
	return nil
}

// call sends body (nil, or a value sent as JSON) as a request made on
// behalf of r: same context (client IP, deadline) and User-Agent. A 2xx
// answer is decoded into v (when not nil); others come back as *apiError.
func (c apiClient) call(r *http.Request, method, path string, body, v any, header ...string) (status int, err error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	// A fresh routing context: the service's router must route on its own.
	ctx := context.WithValue(r.Context(), chi.RouteCtxKey, nil)
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return 0, err
	}
	req.RemoteAddr = r.RemoteAddr
	req.Header.Set("User-Agent", r.UserAgent())
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	c.h.ServeHTTP(rec, req)
	if rec.status < 200 || rec.status > 299 {
		e := &apiError{Status: rec.status}
		if json.Unmarshal(rec.body.Bytes(), &e.Body) != nil || e.Body.Error == "" {
			e.Body = httpapi.ErrorBody{Error: "internal_error", Message: "the service gave an answer that could not be read"}
		}
		e.RetryAfter, _ = strconv.Atoi(rec.header.Get("Retry-After"))
		return rec.status, e
	}
	if v != nil {
		if err := json.Unmarshal(rec.body.Bytes(), v); err != nil {
			return rec.status, fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return rec.status, nil
}

// recorder keeps an in-process answer.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.body.Write(b)
}
