package httpapi

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
)

// PathParam is the path parameter name, unescaped. chi matches the escaped
// path whenever it differs from the default escaping (r.URL.RawPath), so
// its value for /words/fz%2Fslash1 is still "fz%2Fslash1" while the one for
// /words/a%20b is "a b": every handler reads path values through here.
func PathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v // net/http refused malformed escapes before routing
}
