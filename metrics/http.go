package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// HTTP counts and times the requests of one REST service mounted at mount,
// by the route pattern chi matched relative to the mount (the OpenAPI
// document's path, e.g. /blocked/pubkeys/{pubkey}); a path no route
// matched is "unmatched", so scanners cannot grow the label set. (A
// method chi does not know at all is answered 405 by the root router
// before any service sees it, and is not counted.)
func (m *Metrics) HTTP(service, mount string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := routeOf(r, mount)
			method := methodLabel(r.Method)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			m.httpRequests.WithLabelValues(service, route, method, strconv.Itoa(status)).Inc()
			m.httpDuration.WithLabelValues(service, route, method).Observe(time.Since(start).Seconds())
		})
	}
}

// routeOf is the pattern chi matched for r, without mount. A request
// answered before the service's router saw it (the rate limit's 429) is
// looked up in the router; one no route matches is "unmatched".
func routeOf(r *http.Request, mount string) string {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil {
		return "unmatched"
	}
	p := rctx.RoutePattern()
	if (p == "" || strings.HasSuffix(p, "*")) && rctx.Routes != nil {
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		p = rctx.Routes.Find(chi.NewRouteContext(), r.Method, path)
	}
	p = strings.TrimPrefix(p, mount)
	if p == "" || strings.HasSuffix(p, "*") {
		return "unmatched"
	}
	return p
}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}
