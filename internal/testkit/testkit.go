// Package testkit holds the helpers outpost's tests share: an injected
// clock, a bounded wait for something to happen, and a log buffer that
// many goroutines may write.
package testkit

import (
	"bytes"
	"flag"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
)

// Clock is a clock a test moves by hand; its Now is what the code under
// test is given instead of time.Now. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// WaitFor polls cond until it holds, and fails the test when it does not
// within timeout. what names the awaited thing in the failure.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitEvery(t, timeout, 20*time.Millisecond, what, cond)
}

// WaitEvery is WaitFor asking cond at most once every interval, for a cond
// that costs (a whole list read back from a relay).
func WaitEvery(t testing.TB, timeout, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		next := time.Now().Add(every)
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Until(next)) // the poll's pace: what is awaited has no signal to wait on
	}
}

// Concurrently runs f(0) … f(n-1) side by side and, once all have
// returned, fails the test with the first error any returned.
func Concurrently(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// LogBuffer collects what loggers write, from any goroutine.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *LogBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// OpenFDs is how many descriptors the process has open (Linux).
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Flat waits until the process's open descriptors and goroutines are
// back within slack of fds0 and g0 (what a finished call let go of may take
// a moment to close; what it leaked never does), and fails the test with
// the counts when they are not within timeout.
func Flat(t testing.TB, timeout time.Duration, fds0, g0, slack int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		fds, g := OpenFDs(t), runtime.NumGoroutine()
		if fds <= fds0+slack && g <= g0+slack {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors and %d goroutines, from %d and %d", fds, g, fds0, g0)
		}
		time.Sleep(10 * time.Millisecond) // a poll: descriptors and goroutines close in their own time
	}
}

// Past waits until the wall clock is past at. It is for what the code under
// test reads from the wall clock in whole seconds with no clock injected
// (NIP-40 expirations, NIP-98 created_at, badger's TTLs): there the only
// way to see time pass is to let it.
func Past(at time.Time) {
	for d := time.Until(at); d >= 0; d = time.Until(at) {
		time.Sleep(d + time.Millisecond) // see above: only the wall clock can say
	}
}

// ShortParallel, in a TestMain, runs n parallel tests at a time under
// -short, where -parallel was not given, rather than GOMAXPROCS (two on a
// small machine): for a package whose tests wait on sockets, mints and
// intervals far more than they compute, so that the quick loop does not
// wait through their waits two by two. The full run, with -race, keeps the
// default. It parses the flags.
func ShortParallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if testing.Short() && !given {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// IsKind reports whether err carries an *outpost.Error of the given kind.
func IsKind(err error, kind outpost.Kind) bool {
	e := outpost.AsError(err)
	return e != nil && e.Kind == kind
}
