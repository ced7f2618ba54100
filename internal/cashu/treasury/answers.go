package treasury

import (
	"net/http"
	"sync/atomic"
	"time"
)

// answers records when the faucet's mint last answered an HTTP request.
// An operation can succeed without asking the mint anything — a melt
// whose outcome the wallet already holds, an operation another call is
// settling — so its success alone says nothing about the mint: the
// mint's state leaves unreachable (or another fault) only on an answer
// that came after the fault was seen.
type answers struct {
	next http.RoundTripper
	last atomic.Int64 // Unix nanoseconds of the last answer; 0: none yet
}

// RoundTrip counts an answer of the mint's own: a 5xx may come from a
// proxy in front of a mint that is down, so it does not count.
func (a *answers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	if err == nil && resp.StatusCode < http.StatusInternalServerError {
		a.last.Store(time.Now().UnixNano())
	}
	return resp, err
}

// since reports whether the mint answered after at.
func (a *answers) since(at time.Time) bool { return a.last.Load() > at.UnixNano() }
