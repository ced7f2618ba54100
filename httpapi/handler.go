package httpapi

import (
	"context"
	"log/slog"
	"net/http"
)

// Handle adapts a handler that returns its error instead of writing it:
// the error is written as the JSON error body (see Error). Handlers answer
// with Encode and end in `return err`.
func Handle(h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			Error(w, r, err)
		}
	}
}

type loggerCtx struct{}

// NewContextWithLogger and LoggerFromContext carry the logger that Error
// reports internal errors to, so no handler has to be given one.
func NewContextWithLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerCtx{}, log)
}

// LoggerFromContext is the request's logger; slog.Default() when none was
// set, so an internal error is never lost.
func LoggerFromContext(ctx context.Context) *slog.Logger {
	if log, ok := ctx.Value(loggerCtx{}).(*slog.Logger); ok && log != nil {
		return log
	}
	return slog.Default()
}

// Logger puts log in every request's context: the root handler with the
// program's logger, each service's router with its own.
func Logger(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if log == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(NewContextWithLogger(r.Context(), log)))
		})
	}
}
