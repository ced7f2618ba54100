package probe

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/tick"
)

// Target is something to probe: an id and when it was last checked (zero
// when never), so a restarted prober carries on where the last one stopped.
type Target struct {
	ID          string
	LastChecked time.Time
}

// Config configures a Prober.
type Config struct {
	Interval    time.Duration // between two probes of one target; default 5 m
	Deadline    time.Duration // longest one probe may run; default Interval*9/10
	Concurrency int           // probes in flight at once, over all targets; default 16
	Jitter      float64       // ± this fraction of Interval, default 0.1
	Now         func() time.Time
	Tick        tick.Ticker // the scheduler's ticker, as Now is its clock; default a time.Ticker
	Log         *slog.Logger

	// Targets lists what to probe; Probe probes one target. Probe owns its
	// outcome (it records it); an error is only logged.
	Targets func(ctx context.Context) ([]Target, error)
	Probe   func(ctx context.Context, id string) error
}

// Prober runs Probe for every target once per Interval (jittered), at most
// Concurrency at a time and never twice at once for one target. A panic in
// a probe is recovered and logged.
type Prober struct {
	cfg  Config
	sem  chan struct{}
	wake chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	next     map[string]time.Time // when each target is due
	inflight map[string]bool

	lastCycle atomic.Int64 // unix nanoseconds of the last time nothing due was left waiting
	lag       atomic.Int64 // nanoseconds the most overdue target has waited, at the last tick
	probes    atomic.Int64
}

// New returns a Prober; call Run to start it.
func New(cfg Config) *Prober {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Minute
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = cfg.Interval * 9 / 10
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.Jitter <= 0 || cfg.Jitter >= 1 {
		cfg.Jitter = 0.1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Prober{cfg: cfg, sem: make(chan struct{}, cfg.Concurrency), wake: make(chan struct{}, 1),
		next: map[string]time.Time{}, inflight: map[string]bool{}}
}

// Run probes due targets until ctx ends, then waits for probes in flight.
func (p *Prober) Run(ctx context.Context) {
	ticks, stop := p.cfg.Tick.Start(min(max(p.cfg.Interval/20, 20*time.Millisecond), 5*time.Second))
	defer stop()
	defer p.wg.Wait()
	for {
		p.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		case <-p.wake:
		}
	}
}

// Trigger makes id due now (a new mint is probed at once). It never blocks;
// Run picks it up.
func (p *Prober) Trigger(id string) {
	p.mu.Lock()
	p.next[id] = time.Time{}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// RunOnce probes every target now (except those already in flight) and
// waits for them: one full cycle. Tests drive the prober with it.
func (p *Prober) RunOnce(ctx context.Context) int {
	targets, err := p.cfg.Targets(ctx)
	if err != nil {
		p.cfg.Log.Error("probe: list targets", "err", err)
		return 0
	}
	var done sync.WaitGroup
	n := 0
	for _, t := range targets {
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			done.Wait()
			return n
		}
		if !p.start(ctx, t.ID, &done) {
			<-p.sem
			continue
		}
		n++
	}
	done.Wait()
	p.lastCycle.Store(p.cfg.Now().UnixNano())
	p.lag.Store(0)
	return n
}

// Status reports when the prober last had every due target started (zero
// before the first time) and how long the most overdue target has waited.
func (p *Prober) Status() (lastCycle time.Time, lag time.Duration) {
	if ns := p.lastCycle.Load(); ns != 0 {
		lastCycle = time.Unix(0, ns).UTC()
	}
	return lastCycle, time.Duration(p.lag.Load())
}

// Probes is how many probes have been started since New.
func (p *Prober) Probes() int64 { return p.probes.Load() }

// tick starts the probes that are due, as far as free slots allow.
func (p *Prober) tick(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	targets, err := p.cfg.Targets(ctx)
	if err != nil {
		p.cfg.Log.Error("probe: list targets", "err", err)
		return
	}
	now := p.cfg.Now()
	type due struct {
		id string
		at time.Time
	}
	var ready []due
	p.mu.Lock()
	seen := make(map[string]time.Time, len(targets))
	for _, t := range targets {
		at, ok := p.next[t.ID]
		if !ok {
			at = time.Time{} // never checked: due now
			if !t.LastChecked.IsZero() {
				at = t.LastChecked.Add(p.jittered())
			}
		}
		seen[t.ID] = at
		if !p.inflight[t.ID] && !at.After(now) {
			ready = append(ready, due{t.ID, at})
		}
	}
	p.next = seen // forget targets that are gone
	p.mu.Unlock()

	sort.Slice(ready, func(i, j int) bool { return ready[i].at.Before(ready[j].at) })
	started := 0
	for _, d := range ready {
		if !p.tryAcquire() {
			break // every slot is busy; the rest wait for the next tick
		}
		if !p.start(ctx, d.id, nil) {
			<-p.sem
			continue
		}
		started++
	}
	var lag time.Duration
	if started < len(ready) {
		lag = now.Sub(ready[started].at)
		if ready[started].at.IsZero() {
			lag = 0 // a new target waiting for a slot has no schedule to lag behind
		}
	} else {
		p.lastCycle.Store(now.UnixNano())
	}
	p.lag.Store(int64(max(lag, 0)))
}

func (p *Prober) tryAcquire() bool {
	select {
	case p.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// start runs one probe of id in a goroutine holding a semaphore slot that
// the caller already took; it reports false if id is in flight already.
func (p *Prober) start(ctx context.Context, id string, done *sync.WaitGroup) bool {
	p.mu.Lock()
	if p.inflight[id] {
		p.mu.Unlock()
		return false
	}
	p.inflight[id] = true
	p.mu.Unlock()
	p.probes.Add(1)
	p.wg.Add(1)
	if done != nil {
		done.Add(1)
	}
	go func() {
		defer func() {
			p.mu.Lock()
			delete(p.inflight, id)
			p.next[id] = p.cfg.Now().Add(p.jittered())
			p.mu.Unlock()
			<-p.sem
			if done != nil {
				done.Done()
			}
			p.wg.Done()
		}()
		p.runProbe(ctx, id)
	}()
	return true
}

func (p *Prober) runProbe(ctx context.Context, id string) {
	defer func() {
		if v := recover(); v != nil {
			p.cfg.Log.Error("probe panicked", "target", id, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Deadline)
	defer cancel()
	if err := p.cfg.Probe(ctx, id); err != nil && ctx.Err() == nil {
		p.cfg.Log.Warn("probe failed", "target", id, "err", err)
	}
}

// jittered is Interval ± Jitter.
func (p *Prober) jittered() time.Duration {
	j := (rand.Float64()*2 - 1) * p.cfg.Jitter
	return time.Duration(float64(p.cfg.Interval) * (1 + j))
}
