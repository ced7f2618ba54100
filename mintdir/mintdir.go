// Package mintdir is the Cashu mint directory: a catalogue of mints with a
// stable id independent of their URLs, the record of every check the prober
// makes, status (by consensus with the other monitors it follows) and
// incidents, metadata snapshots with a change history, uptime rolled up as
// checks are written, reviews read from the relay's event store (NIP-87),
// trust scores, derived features, views and stats.
//
// Everything lives in the shared badger database under kv.PrefixMintdir;
// the second key byte says what a record is (see keys.go).
package mintdir

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/probe"
)

// Events is the part of the relay's event store the directory reads reviews from.
type Events interface {
	Find(ctx context.Context, filter nostr.Filter) iter.Seq2[*nostr.Event, error]
	Count(ctx context.Context, filters []nostr.Filter, skip func(events.Meta) bool) (int64, error)
}

// Settings are the directory's operator settings, each bound by
// cmd/outpost to the flag its tag names and that flag's OUTPOST_*
// environment twin. Start from DefaultSettings; Valid checks them.
type Settings struct {
	ProbeInterval    time.Duration `flag:"probe-interval" usage:"how often each mint is checked (jittered ±10%)"`
	ProbeTimeout     time.Duration `flag:"probe-timeout" usage:"timeout of one request to a mint, below the interval (default 10s, or half of --probe-interval when that is less)"`
	ProbeConcurrency int           `flag:"probe-concurrency" usage:"checks in flight at once, over all mints"`
	SlowRTT          time.Duration `flag:"probe-slow-ms,ms" usage:"a reachable mint slower than this (ms) is degraded"`
	AllowPrivate     bool          `flag:"probe-allow-private" usage:"allow mints on private, loopback and link-local addresses (local tests only)"`
	ProbeProxy       string        `flag:"probe-proxy" usage:"check mints through this proxy: socks5://host:port (Tor's SOCKS port: .onion mints are checked only through one) or http://host:port (CONNECT); what it is asked for is still refused when private"`
	Monitors         []string      `flag:"monitors" usage:"other monitors (npub or hex, comma-separated) whose kind-38166 mint status events count as vantages in each mint's status"`
}

// DefaultSettings are the defaults docs/configuration.md lists. The probe timeout is left
// zero: it follows the interval (see probeTimeout).
func DefaultSettings() Settings {
	return Settings{ProbeInterval: 5 * time.Minute, ProbeConcurrency: 16, SlowRTT: 2 * time.Second}
}

// probeTimeout is the timeout when none is set: probe.DefaultTimeout, or
// half the interval when that is less, so that a short interval alone
// (OUTPOST_PROBE_INTERVAL=1s) is a valid setting.
func probeTimeout(interval time.Duration) time.Duration {
	return min(probe.DefaultTimeout, interval/2)
}

// Valid checks every setting, naming each bad one, and fills in the probe
// timeout when none is set.
func (s *Settings) Valid() error {
	var errs []error
	if s.ProbeInterval < time.Second {
		errs = append(errs, settings.Errorf("probe-interval", "must be at least 1s, got %s", settings.FormatDuration(s.ProbeInterval)))
	}
	if s.ProbeTimeout == 0 {
		s.ProbeTimeout = probeTimeout(s.ProbeInterval)
	}
	if s.ProbeTimeout <= 0 || s.ProbeTimeout >= s.ProbeInterval {
		errs = append(errs, settings.Errorf("probe-timeout", "must be positive and below --probe-interval (%s), got %s",
			settings.FormatDuration(s.ProbeInterval), settings.FormatDuration(s.ProbeTimeout)))
	}
	if s.ProbeConcurrency < 1 || s.ProbeConcurrency > 1000 {
		errs = append(errs, settings.Errorf("probe-concurrency", "must be from 1 to 1000"))
	}
	if _, err := probe.ParseProxy(s.ProbeProxy); err != nil {
		errs = append(errs, settings.Errorf("probe-proxy", "%v", err))
	}
	if s.SlowRTT < time.Millisecond {
		errs = append(errs, settings.Errorf("probe-slow-ms", "must be at least 1"))
	}
	for i, m := range s.Monitors {
		pk, err := pubkey.Parse(m)
		if err != nil {
			errs = append(errs, settings.Errorf("monitors", "%q is not a public key", m))
		}
		s.Monitors[i] = pk
	}
	if len(s.Monitors) > maxMonitors {
		errs = append(errs, settings.Errorf("monitors", "at most %d, got %d", maxMonitors, len(s.Monitors)))
	}
	return errors.Join(errs...)
}

// Config configures a Directory: its settings (zero ones take
// DefaultSettings' values) and what it runs on.
type Config struct {
	Settings
	DB       *kv.DB
	Events   Events
	Log      *slog.Logger
	Now      func() time.Time // injected clock; default time.Now
	Resolver *net.Resolver    // for the submit-time SSRF check; default net.DefaultResolver
	// OnCheck is told about every stored check (for metrics): ok, skipped
	// (a 429), and the error kind of a failed one. It must not block.
	OnCheck func(ok, skipped bool, errKind string)
	// OnChange is told the id of a mint whose record changed (a check, a
	// summary, another monitor's status), once the change is stored, so a
	// publisher republishes that mint instead of polling the catalogue. It
	// must not block.
	OnChange func(id string)
	// Self is this outpost's own monitor key (hex), under which its own
	// vantage is listed; its own status events are never read as another
	// monitor's.
	Self string
	// Own are the URLs of mints this outpost runs itself (the faucet's
	// embedded test mint): listed from the first start, so a fresh outpost's
	// directory shows a real mint, and checked although they are on this
	// host — those exact addresses only.
	Own []string
	// Weight is how much a review's author counts in the trust score, 0
	// to 1 (the web of trust's Weight); nil: every review fully.
	Weight func(pubkey string) float64
	// Audits reads a mint's audits of the last 30 days (package audit,
	// with --audit); nil without. Read when the mint's summary is.
	Audits func(mintURL string) (AuditSummary, error)
}

const (
	maxMonitors    = 100                 // followed monitors: each is a read per mint per status change
	offlineAfter   = 3                   // consecutive failed checks
	abandonedAfter = 30 * 24 * time.Hour // offline that long
	keysetsEvery   = time.Hour
)

// Directory is the mint directory. It is safe for concurrent use.
type Directory struct {
	db     *kv.DB
	events Events
	log    *slog.Logger
	now    func() time.Time
	cfg    Config
	client *probe.Client
	prober *probe.Prober
	views  *viewCounter
	work   chan func(context.Context)
	stats  statsCache
	list   listCache

	announcers    *ratelimit.Limiter // new mints per announcement author
	monitorEvents *ratelimit.Limiter // status events processed per followed monitor

	reviewsSeen atomic.Int64 // bumped when a review is saved; invalidates cached stats
	mergeMu     sync.Mutex   // one merge at a time keeps two merges from crossing
	unproxied   sync.Map     // onion mints said once to be unchecked for want of a proxy
}

// New returns a Directory; Run starts its prober and background work.
func New(cfg Config) *Directory {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	def := DefaultSettings()
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = def.ProbeInterval
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = probeTimeout(cfg.ProbeInterval)
	}
	if cfg.ProbeConcurrency <= 0 {
		cfg.ProbeConcurrency = def.ProbeConcurrency
	}
	if cfg.SlowRTT <= 0 {
		cfg.SlowRTT = def.SlowRTT
	}
	if cfg.Weight == nil {
		cfg.Weight = func(string) float64 { return 1 }
	}
	var own []string // their host:port, for the SSRF guard
	for _, raw := range cfg.Own {
		if u, err := url.Parse(raw); err == nil {
			own = append(own, u.Host)
		}
	}
	proxy, _ := probe.ParseProxy(cfg.ProbeProxy) // Valid has said
	d := &Directory{db: cfg.DB, events: cfg.Events, log: cfg.Log, now: cfg.Now, cfg: cfg,
		client: probe.NewClient(probe.ClientOptions{Timeout: cfg.ProbeTimeout, AllowPrivate: cfg.AllowPrivate, Allow: own, Proxy: proxy}),
		work:   make(chan func(context.Context), 1024)}
	d.views = newViewCounter(cfg.Now)
	d.announcers = ratelimit.New(announcedMintsPerHour, time.Hour, cfg.Now)
	d.monitorEvents = ratelimit.New(vantageEventsPerHour, time.Hour, cfg.Now)
	d.prober = probe.New(probe.Config{
		Interval:    cfg.ProbeInterval,
		Deadline:    3*cfg.ProbeTimeout + 5*time.Second, // info, keysets and the writes
		Concurrency: cfg.ProbeConcurrency,
		Now:         cfg.Now,
		Log:         cfg.Log,
		Targets:     d.targets,
		Probe:       d.Probe,
	})
	return d
}

// Run probes mints, flushes view counts and does queued work until ctx
// ends; it returns after a last flush, so the database can close after it.
func (d *Directory) Run(ctx context.Context) {
	d.listOwn()
	d.loadVantages(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { d.prober.Run(ctx) })
	wg.Go(func() { d.runWork(ctx) })
	wg.Go(func() { d.runHousekeeping(ctx) })
	wg.Wait()
	if err := d.FlushViews(context.Background()); err != nil {
		d.log.Error("mintdir: flush views at shutdown", "err", err)
	}
}

// ProbeAll runs one full probe cycle now and waits for it; for tests and
// benchmarks, which drive the prober instead of sleeping on its interval.
func (d *Directory) ProbeAll(ctx context.Context) int { return d.prober.RunOnce(ctx) }

// HealthChecks are what the directory's /health is judged on: the store,
// and how far the prober is behind.
type HealthChecks struct {
	Store            string     `json:"store"` // ok or error
	MintsTotal       int        `json:"mints_total"`
	LastProbeCycleAt *time.Time `json:"last_probe_cycle_at"` // null before the first
	ProbeLagSeconds  float64    `json:"probe_lag_seconds"`
}

// Health makes no outbound calls. It is down without the store, degraded
// when the prober has fallen two intervals behind.
func (d *Directory) Health(ctx context.Context) outpost.Health[HealthChecks] {
	n, err := d.Count()
	last, lag := d.prober.Status()
	h := outpost.NewHealth(outpost.Version, HealthChecks{Store: "ok", MintsTotal: n, ProbeLagSeconds: lag.Round(time.Millisecond).Seconds()})
	if !last.IsZero() {
		at := last.UTC().Truncate(time.Second)
		h.Checks.LastProbeCycleAt = &at
	}
	if err != nil {
		h.Checks.Store = "error"
		h.Fail(outpost.HealthDown, "the database cannot be read: "+err.Error())
	}
	if lag > 2*d.cfg.ProbeInterval {
		h.Fail(outpost.HealthDegraded, fmt.Sprintf("the prober is %v behind its schedule", lag.Round(time.Second)))
	}
	return h
}

// runWork does work queued by relay hooks (they must not block the relay).
func (d *Directory) runWork(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-d.work:
			func() {
				defer func() {
					if v := recover(); v != nil {
						d.log.Error("mintdir: queued work panicked", "panic", v)
					}
				}()
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				f(wctx)
			}()
		}
	}
}

// enqueue queues f without blocking; when the queue is full f is dropped
// (the next probe of a mint redoes what it would have done).
func (d *Directory) enqueue(f func(context.Context)) {
	select {
	case d.work <- f:
	default:
		d.log.Warn("mintdir: work queue full; dropping a task")
	}
}

// runHousekeeping flushes view counts and prunes old raw data.
func (d *Directory) runHousekeeping(ctx context.Context) {
	flush := time.NewTicker(10 * time.Second)
	defer flush.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			if !d.db.Writable() {
				continue // the views wait in memory until there is room again
			}
			if err := d.FlushViews(ctx); err != nil && ctx.Err() == nil {
				d.log.Log(ctx, kv.FailureLevel(err), "mintdir: flush views", "err", err)
			}
		case <-prune.C:
			if !d.db.Writable() {
				continue
			}
			if err := d.Prune(ctx); err != nil && ctx.Err() == nil {
				d.log.Log(ctx, kv.FailureLevel(err), "mintdir: prune", "err", err)
			}
		}
	}
}

// deleteKeys deletes keys in one transaction.
func (d *Directory) deleteKeys(keys [][]byte) error {
	return d.db.Update(func(txn *kv.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
