// Package outpost holds what every part of outpost shares: the one error type
// that carries a client-safe code and message, and the program version.
package outpost

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Version is the program version; the build may override it with -ldflags.
var Version = "0.1.0-dev"

// Kind classifies an Error; httpapi maps each kind to one HTTP status.
type Kind int

const (
	Internal      Kind = iota // 500: never shown to clients in detail
	Invalid                   // 400
	Unauthorized              // 401
	Forbidden                 // 403
	NotFound                  // 404
	Conflict                  // 409
	Gone                      // 410
	TooLarge                  // 413
	Unprocessable             // 422
	RateLimited               // 429
	BadGateway                // 502
	Unavailable               // 503
	TimedOut                  // 408: the client did not send its request in time
	StorageFull               // 507: too little disk space left to write; reads still work
)

// Error is an error whose Code and Message are safe to send to a client.
// Anything else (wrapped causes) is only logged.
type Error struct {
	Kind       Kind
	Code       string         // snake_case, e.g. "invalid_pubkey"
	Message    string         // human text
	Details    map[string]any // optional extra fields for the client
	RetryAfter time.Duration  // for RateLimited (and Unavailable when known)
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e with one more detail field.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// maxEcho is how many characters of a client's value a message repeats.
const maxEcho = 64

// Echo quotes a value the client sent, for a message about it, cut to
// maxEcho characters: a 5,000-character path is not sent back whole.
func Echo(s string) string {
	if utf8.RuneCountInString(s) > maxEcho {
		s = string([]rune(s)[:maxEcho]) + "…"
	}
	return strconv.Quote(s)
}
