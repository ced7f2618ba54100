// Package httpapi holds what outpost's three REST services share: the error
// contract, JSON encoding and decoding, middleware, and the root handler that
// mounts the services and the relay on one listener.
package httpapi

import (
	"math"
	"net/http"
	"strconv"

	"github.com/outpost-relay/outpost"
)

// statusOf is the one place an error kind becomes an HTTP status.
var statusOf = map[outpost.Kind]int{
	outpost.Internal:      http.StatusInternalServerError,
	outpost.Invalid:       http.StatusBadRequest,
	outpost.Unauthorized:  http.StatusUnauthorized,
	outpost.Forbidden:     http.StatusForbidden,
	outpost.NotFound:      http.StatusNotFound,
	outpost.Conflict:      http.StatusConflict,
	outpost.Gone:          http.StatusGone,
	outpost.TooLarge:      http.StatusRequestEntityTooLarge,
	outpost.Unprocessable: http.StatusUnprocessableEntity,
	outpost.RateLimited:   http.StatusTooManyRequests,
	outpost.BadGateway:    http.StatusBadGateway,
	outpost.Unavailable:   http.StatusServiceUnavailable,
	outpost.TimedOut:      http.StatusRequestTimeout,
	outpost.StorageFull:   http.StatusInsufficientStorage,
}

// StatusOf is the HTTP status of an error of e's kind, for handlers that
// answer errors in a body of another shape (NIP-86).
func StatusOf(e *outpost.Error) int {
	if status, ok := statusOf[e.Kind]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error   string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Error writes err as the JSON error body. Errors that are not *outpost.Error
// (or are Internal) are logged with the request's logger (see Logger) and
// answered with a generic 500.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	e := outpost.AsError(err)
	if e == nil || e.Kind == outpost.Internal {
		LoggerFromContext(r.Context()).ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		e = outpost.Errorf(outpost.Internal, "internal_error", "internal server error")
	}
	status, ok := statusOf[e.Kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	if e.Kind == outpost.Unauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	Encode(w, status, ErrorBody{Error: e.Code, Message: e.Message, Details: e.Details})
}
