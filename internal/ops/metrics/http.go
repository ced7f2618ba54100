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
// matched is "unmatched", so scanners cannot grow the label set. A 405 is
// labelled with the route its path has under the methods it does allow.
// Answers the root gives before any route is matched (a blocked client
// IP, a method chi does not know) come through here too: httpapi wraps
// them in the HTTP of the service whose mount the path is under.
func (m *Metrics) HTTP(service, mount string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			route := routeOf(r, mount, status)
			method := methodLabel(r.Method)
			m.httpRequests.WithLabelValues(service, route, method, strconv.Itoa(status)).Inc()
			m.httpDuration.WithLabelValues(service, route, method).Observe(time.Since(start).Seconds())
		})
	}
}

// routeOf is the pattern chi matched for r, without mount. A request
// answered before the service's router saw it (the rate limit's 429, the
// root's refusals) is looked up in the router, and a 405 under the methods
// the path has; one no route matches is "unmatched".
func routeOf(r *http.Request, mount string, status int) string {
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
		methods := []string{r.Method}
		if status == http.StatusMethodNotAllowed {
			methods = append(methods, routeMethods...)
		}
		for _, m := range methods {
			if p = rctx.Routes.Find(chi.NewRouteContext(), m, path); p != "" {
				break
			}
		}
	}
	p = strings.TrimPrefix(p, mount)
	if p == "" || strings.HasSuffix(p, "*") {
		return "unmatched"
	}
	return p
}

// routeMethods are the methods outpost's routes are registered with.
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}
