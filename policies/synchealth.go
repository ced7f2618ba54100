package policies

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// Identity names the server that issued a list answer: its service key and
// the epoch of its data, which changes when the data is restored from a
// backup or made anew. A cursor means something only to the identity that
// issued it: a follower that meets another identity at its remote's URL (a
// promoted node behind the same name, say) fetches the whole list again.
type Identity struct {
	PubKey string // service key (hex); "" from an outpost that gives none
	Epoch  string
}

// FailAfter is how long a follower's syncs may fail (no answer, an error
// status, an answer that is not a ban list) before its SyncHealth reports
// it failing.
const FailAfter = 10 * time.Second

// maxBackoff caps the wait between attempts while the remote fails.
const maxBackoff = time.Minute

// errNoAnswer is the failure of an attempt still waiting for its answer.
var errNoAnswer = errors.New("no answer yet")

// backoff is the wait before the next attempt after n failures in a row:
// interval doubled with each, up to maxBackoff (or interval, when longer),
// drawn from the upper half of that at random so that the followers of one
// primary do not come back in step.
func backoff(interval time.Duration, n int) time.Duration {
	ceiling := max(maxBackoff, interval)
	d := interval
	for i := 0; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	return d/2 + rand.N(d/2+1)
}

// SyncHealth records how a follower's syncs go, for its health report. The
// zero value is ready; it is safe for concurrent use.
type SyncHealth struct {
	mu       sync.Mutex
	inFlight time.Time // start of the attempt under way; zero between attempts
	failing  time.Time // start of the first failed attempt since the last success
	lastOK   time.Time
	err      error
	server   Identity
}

// SyncState is a SyncHealth as of one moment.
type SyncState struct {
	LastSuccess  time.Time // zero: none yet
	FailingSince time.Time // zero while the syncs work
	Err          error     // why they fail
	Server       Identity  // of the last answer
	// Failing: the syncs have failed for longer than FailAfter.
	Failing bool
}

func (h *SyncHealth) begin(now time.Time) {
	h.mu.Lock()
	h.inFlight = now
	h.mu.Unlock()
}

func (h *SyncHealth) end(now time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := h.inFlight
	h.inFlight, h.err = time.Time{}, err
	switch {
	case err == nil:
		h.lastOK, h.failing = now, time.Time{}
	case h.failing.IsZero():
		h.failing = start
	}
}

func (h *SyncHealth) seen(id Identity) {
	h.mu.Lock()
	h.server = id
	h.mu.Unlock()
}

// State is the syncs' state at now. An attempt that has waited longer than
// FailAfter for its answer counts as failing since it began, so a remote
// that hangs is reported before the attempt's deadline.
func (h *SyncHealth) State(now time.Time) SyncState {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := SyncState{LastSuccess: h.lastOK, FailingSince: h.failing, Err: h.err, Server: h.server}
	if st.FailingSince.IsZero() && !h.inFlight.IsZero() && now.Sub(h.inFlight) > FailAfter {
		st.FailingSince, st.Err = h.inFlight, errNoAnswer
	}
	st.Failing = !st.FailingSince.IsZero() && now.Sub(st.FailingSince) > FailAfter
	return st
}
