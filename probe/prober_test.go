package probe

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

func (c *counter) enter(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.peak = max(c.peak, c.now)
	c.per[id]++
	c.perPeak = max(c.perPeak, c.per[id])
	c.total[id]++
}

func (c *counter) exit(id string) {
	c.mu.Lock()
	c.now--
	c.per[id]--
	c.mu.Unlock()
}

func (c *counter) count(id string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.total[id] }

func TestRunOnceProbesEveryTargetWithinTheCap(t *testing.T) {
	c := newCounter()
	p := New(Config{Concurrency: 4, Log: quiet(), Targets: targets(40), Probe: func(ctx context.Context, id string) error {
		c.enter(id)
		defer c.exit(id)
		time.Sleep(5 * time.Millisecond)
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
	if c.peak > 4 || c.peak < 2 {
		t.Fatalf("peak concurrency %d, want 2..4", c.peak)
	}
	if last, _ := p.Status(); last.IsZero() {
		t.Fatal("no cycle time after RunOnce")
	}
}

func TestOneProbeInFlightPerTarget(t *testing.T) {
	c := newCounter()
	release := make(chan struct{})
	p := New(Config{Concurrency: 8, Interval: time.Hour, Log: quiet(), Targets: targets(1), Probe: func(ctx context.Context, id string) error {
		c.enter(id)
		defer c.exit(id)
		<-release
		return nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	for range 20 {
		p.Trigger("m0")
		go p.RunOnce(ctx)
		time.Sleep(2 * time.Millisecond)
	}
	close(release)
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	if c.perPeak != 1 {
		t.Fatalf("%d probes of one target ran at once", c.perPeak)
	}
}

func TestPanicsAreRecovered(t *testing.T) {
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

func TestRunFollowsTheIntervalAndTheLastCheck(t *testing.T) {
	now := time.Now()
	c := newCounter()
	ts := []Target{{ID: "new"}, {ID: "recent", LastChecked: now}, {ID: "old", LastChecked: now.Add(-time.Hour)}}
	p := New(Config{Interval: 300 * time.Millisecond, Log: quiet(),
		Targets: func(context.Context) ([]Target, error) { return ts, nil },
		Probe:   func(ctx context.Context, id string) error { c.enter(id); c.exit(id); return nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	time.Sleep(150 * time.Millisecond)
	if c.count("new") != 1 || c.count("old") != 1 || c.count("recent") != 0 {
		t.Fatalf("after 150ms: new %d old %d recent %d, want 1 1 0", c.count("new"), c.count("old"), c.count("recent"))
	}
	time.Sleep(1500 * time.Millisecond)
	cancel()
	<-done
	for _, id := range []string{"new", "recent", "old"} {
		// 1.65 s at 300 ms ± 10%: about 5 probes.
		if n := c.count(id); n < 3 || n > 7 {
			t.Errorf("%s probed %d times in 1.65 s at a 300 ms interval", id, n)
		}
	}
	if last, lag := p.Status(); time.Since(last) > time.Second || lag > 200*time.Millisecond {
		t.Errorf("status: last cycle %v ago, lag %v", time.Since(last), lag)
	}
}

func TestTriggerProbesAtOnce(t *testing.T) {
	probed := make(chan string, 10)
	ts := []Target{{ID: "a", LastChecked: time.Now()}}
	p := New(Config{Interval: time.Hour, Log: quiet(),
		Targets: func(context.Context) ([]Target, error) { return ts, nil },
		Probe:   func(ctx context.Context, id string) error { probed <- id; return nil }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	select {
	case id := <-probed:
		t.Fatalf("%s probed before it was due", id)
	case <-time.After(100 * time.Millisecond):
	}
	p.Trigger("a")
	select {
	case <-probed:
	case <-time.After(2 * time.Second):
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
	p = New(Config{Interval: time.Second, Deadline: time.Hour, Log: quiet(), Targets: targets(3),
		Probe: func(ctx context.Context, id string) error { <-ctx.Done(); return ctx.Err() }})
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
}
