package probe

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func targets(n int) func(context.Context) ([]Target, error) {
	ts := make([]Target, n)
	for i := range ts {
		ts[i] = Target{ID: fmt.Sprint("m", i)}
	}
	return func(context.Context) ([]Target, error) { return ts, nil }
}

// counter tracks probes in flight overall and per target.
type counter struct {
	mu        sync.Mutex
	now, peak int
	per       map[string]int
	perPeak   int
	total     map[string]int
}

func newCounter() *counter { return &counter{per: map[string]int{}, total: map[string]int{}} }

// enter counts a probe of id in and returns how many are in flight.
func (c *counter) enter(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.peak = max(c.peak, c.now)
	c.per[id]++
	c.perPeak = max(c.perPeak, c.per[id])
	c.total[id]++
	return c.now
}

func (c *counter) exit(id string) {
	c.mu.Lock()
	c.now--
	c.per[id]--
	c.mu.Unlock()
}

func (c *counter) count(id string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.total[id] }

func TestRunOnceProbesEveryTargetWithinTheCap(t *testing.T) {
	t.Parallel()
	c := newCounter()
	full := make(chan struct{})
	var once sync.Once
	p := New(Config{Concurrency: 4, Log: quiet(), Targets: targets(40), Probe: func(ctx context.Context, id string) error {
		if c.enter(id) == 4 {
			once.Do(func() { close(full) })
		}
		defer c.exit(id)
		// The first probes wait until four are in flight at once, as the
		// cap allows; under a smaller cap they never are, and RunOnce ends
		// with ctx.
		select {
		case <-full:
		case <-ctx.Done():
		}
		return nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := p.RunOnce(ctx); n != 40 {
		t.Fatalf("RunOnce probed %d, want 40", n)
	}
	for i := range 40 {
		if got := c.count(fmt.Sprint("m", i)); got != 1 {
			t.Fatalf("m%d probed %d times", i, got)
		}
	}
	if c.peak != 4 {
		t.Fatalf("peak concurrency %d, want the cap, 4", c.peak)
	}
	if last, _ := p.Status(); last.IsZero() {
		t.Fatal("no cycle time after RunOnce")
	}
}

// While a target's probe runs, neither a tick, nor Trigger, nor RunOnce
// starts another of it; once it ends, Trigger does.
func TestOneProbeInFlightPerTarget(t *testing.T) {
	t.Parallel()
	c := newCounter()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	s := runStepped(t, Config{Concurrency: 8, Interval: time.Minute, Targets: targets(1), Probe: func(ctx context.Context, id string) error {
		c.enter(id)
		defer c.exit(id)
		entered <- struct{}{}
		<-release
		return nil
	}})
	<-entered // never checked: probed at once
	for range 5 {
		s.Trigger("m0")
		if n := s.RunOnce(s.ctx); n != 0 {
			t.Fatalf("RunOnce started %d probes of a target in flight", n)
		}
		s.clock.Add(time.Hour)
		for range 2 { // the second tick is taken once the first is handled
			if err := s.ticks.Tick(s.ctx, s.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := c.count("m0"); n != 1 {
		t.Fatalf("%d probes of one target started", n)
	}
	close(release)
	s.step(t, 0) // the probe has ended
	s.Trigger("m0")
	<-entered
	if c.count("m0") != 2 || c.perPeak != 1 {
		t.Fatalf("%d probes, %d at once", c.count("m0"), c.perPeak)
	}
}

func TestPanicsAreRecovered(t *testing.T) {
	t.Parallel()
	var ok atomic.Int32
	p := New(Config{Log: quiet(), Targets: targets(5), Probe: func(ctx context.Context, id string) error {
		if id == "m2" {
			panic("mint exploded")
		}
		ok.Add(1)
		return nil
	}})
	for range 2 {
		if n := p.RunOnce(context.Background()); n != 5 {
			t.Fatalf("RunOnce started %d", n)
		}
	}
	if ok.Load() != 8 {
		t.Fatalf("%d good probes, want 8", ok.Load())
	}
}

// stepped is a Prober on a test clock and a manual ticker, running until
// the test ends.
type stepped struct {
	*Prober
	clock *testkit.Clock
	ticks *testkit.Ticker
	ctx   context.Context
}

// t0 is when a stepped prober starts.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func runStepped(t *testing.T, cfg Config) *stepped {
	s := &stepped{clock: testkit.NewClock(t0), ticks: &testkit.Ticker{}}
	cfg.Now, cfg.Tick, cfg.Log = s.clock.Now, s.ticks.Start, quiet()
	s.Prober = New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s.ctx = ctx
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// step moves the clock by d and ticks; it returns once that tick's probes
// have all ended (the tick after it is taken only when the loop is done
// with this one, and every probe it started is then in flight).
func (s *stepped) step(t *testing.T, d time.Duration) {
	t.Helper()
	s.clock.Add(d)
	for range 2 {
		if err := s.ticks.Tick(s.ctx, s.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the probes to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.inflight) == 0
	})
}

func (c *counter) counts(ids ...string) []int {
	var n []int
	for _, id := range ids {
		n = append(n, c.count(id))
	}
	return n
}

// A target never checked is due at once, one checked an hour ago too, one
// checked just now only an interval (± 10 %) later; then each comes round
// once per interval.
func TestRunFollowsTheIntervalAndTheLastCheck(t *testing.T) {
	t.Parallel()
	c := newCounter()
	ts := []Target{{ID: "new"}, {ID: "recent", LastChecked: t0}, {ID: "old", LastChecked: t0.Add(-time.Hour)}}
	s := runStepped(t, Config{Interval: time.Minute, Targets: func(context.Context) ([]Target, error) { return ts, nil },
		Probe: func(ctx context.Context, id string) error { c.enter(id); c.exit(id); return nil }})
	ids := []string{"new", "recent", "old"}
	for _, want := range []struct {
		step time.Duration
		n    []int
	}{
		{0, []int{1, 0, 1}},
		{53 * time.Second, []int{1, 0, 1}}, // before the earliest jitter (54 s)
		{14 * time.Second, []int{2, 1, 2}}, // 67 s: after the latest (66 s)
		{53 * time.Second, []int{2, 1, 2}}, // 53 s after those probes
		{14 * time.Second, []int{3, 2, 3}},
		{10 * time.Minute, []int{4, 3, 4}}, // a long gap is one probe, not one per missed interval
	} {
		s.step(t, want.step)
		if got := c.counts(ids...); !slices.Equal(got, want.n) {
			t.Fatalf("after %v more: probes of %v = %v, want %v", want.step, ids, got, want.n)
		}
		if last, lag := s.Status(); !last.Equal(s.clock.Now()) || lag != 0 {
			t.Fatalf("status: last cycle %v (now %v), lag %v", last, s.clock.Now(), lag)
		}
	}
}

// Trigger makes a target due at once, without waiting for a tick.
func TestTriggerProbesAtOnce(t *testing.T) {
	t.Parallel()
	probed := make(chan string, 10)
	s := runStepped(t, Config{Interval: time.Hour,
		Targets: func(context.Context) ([]Target, error) { return []Target{{ID: "a", LastChecked: t0}}, nil },
		Probe:   func(ctx context.Context, id string) error { probed <- id; return nil }})
	s.step(t, time.Minute)
	if len(probed) != 0 {
		t.Fatal("probed before it was due")
	}
	s.Trigger("a")
	select {
	case <-probed:
	case <-s.ctx.Done():
		t.Fatal("Trigger did not probe")
	}
}

func TestDeadlineAndCancel(t *testing.T) {
	var timedOut atomic.Int32
	p := New(Config{Interval: time.Second, Deadline: 100 * time.Millisecond, Log: quiet(), Targets: targets(3),
		Probe: func(ctx context.Context, id string) error {
			<-ctx.Done()
			if ctx.Err() == context.DeadlineExceeded {
				timedOut.Add(1)
			}
			return ctx.Err()
		}})
	start := time.Now()
	p.RunOnce(context.Background())
	if d := time.Since(start); d > time.Second || timedOut.Load() != 3 {
		t.Fatalf("RunOnce took %v, %d probes hit the deadline", d, timedOut.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	p = New(Config{Interval: time.Second, Deadline: time.Hour, Log: quiet(), Targets: targets(3),
		Probe: func(ctx context.Context, id string) error { started.Add(1); <-ctx.Done(); return ctx.Err() }})
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	testkit.WaitFor(t, 10*time.Second, "the probes to start", func() bool { return started.Load() == 3 })
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
}
