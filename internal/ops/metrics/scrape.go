package metrics

import (
	"context"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/relay"
	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds what one scrape may spend reading the store.
const scrapeTimeout = 5 * time.Second

// collector is a scrape-time collector: collect reads the figures and
// sends one metric per desc (more for labelled ones).
type collector struct {
	descs   []*prometheus.Desc
	collect func(ctx context.Context, ch chan<- prometheus.Metric)
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	c.collect(ctx, ch)
}

func desc(subsystem, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// WatchRelay reports the relay's connections and subscriptions, and the
// refusals of every per-IP and per-author limit (restLimit is the REST
// services' per-IP limiter).
func (m *Metrics) WatchRelay(r *relay.Relay, restLimit *ratelimit.Limiter) {
	conns := desc("relay", "connections", "Open websocket connections.")
	subs := desc("relay", "subscriptions", "Open REQ subscriptions over every connection.")
	values := desc("relay", "filter_values", "Ids, authors, kinds and tag values named by the open subscriptions' filters.")
	limited := desc("", "rate_limited_total", "Requests refused by a rate limit since start, by limit: rest (OUTPOST_RATE_LIMIT), "+
		"relay_connections, relay_events_ip, relay_events_author, relay_subscriptions, relay_filter_values.", "limit")
	m.Register(collector{descs: []*prometheus.Desc{conns, subs, values, limited}, collect: func(_ context.Context, ch chan<- prometheus.Metric) {
		st := r.Stats()
		ch <- gauge(conns, float64(st.Clients))
		ch <- gauge(subs, float64(st.Subscriptions))
		ch <- gauge(values, float64(st.FilterValues))
		ch <- counter(limited, float64(restLimit.Refused()), "rest")
		ch <- counter(limited, float64(st.ConnectionsRefused), "relay_connections")
		ch <- counter(limited, float64(st.IPEventsRefused), "relay_events_ip")
		ch <- counter(limited, float64(st.AuthorEventsRefused), "relay_events_author")
		ch <- counter(limited, float64(st.SubscriptionsRefused), "relay_subscriptions")
		ch <- counter(limited, float64(st.FilterValuesRefused), "relay_filter_values")
	}})
}

// ServiceStatus reads one service's current health status, as its part of
// /health says it.
type ServiceStatus struct {
	Service string
	Status  func(ctx context.Context) string // outpost.HealthOK, HealthDegraded or HealthDown; nil when it has no health
}

// WatchHealth reports each service's health status as a state set: exactly
// one of ok, degraded and down is 1. A service without a status (one this
// node does not run, like the faucet of a node with --faucet-primary) has
// no series, as it has no part in /health: a scrape runs its collectors in
// goroutines of their own, so a nil call there would kill the process.
func (m *Metrics) WatchHealth(services []ServiceStatus) {
	d := desc("", "service_health", "1 for the service's current health status (ok, degraded, down), 0 for the others.", "service", "status")
	m.Register(collector{descs: []*prometheus.Desc{d}, collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
		for _, s := range services {
			if s.Status == nil {
				continue
			}
			now := s.Status(ctx)
			for _, st := range []string{outpost.HealthOK, outpost.HealthDegraded, outpost.HealthDown} {
				ch <- gauge(d, boolValue(now == st), s.Service, st)
			}
		}
	}})
}

// WatchBanlist reports the ban list's sizes.
func (m *Metrics) WatchBanlist(bl *banlist.Service) {
	bans := desc("banlist", "active_bans", "Public keys banned now.")
	words := desc("banlist", "blocked_words", "Blocked words and phrases.")
	published := desc("publish", "events_total", "Events outpost signed (ban list pages, mint status) sent to a publish relay "+
		"(OUTPOST_PUBLISH_RELAYS) since start, by relay and outcome: published (OK true), refused (OK false, every try counted).", "relay", "outcome")
	m.Register(collector{descs: []*prometheus.Desc{bans, words, published}, collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
		c := bl.Health(ctx).Checks
		ch <- gauge(bans, float64(c.ActiveBans))
		ch <- gauge(words, float64(c.BlockedWords))
		for _, p := range c.Publishing {
			ch <- counter(published, float64(p.Published), p.Relay, "published")
			ch <- counter(published, float64(p.Refused), p.Relay, "refused")
		}
	}})
}

// WatchMintdir reports the directory's mints by status, open incidents and
// the prober's lag (from /mintdir/stats, cached 10 s, and /mintdir/health).
func (m *Metrics) WatchMintdir(dir *mintdir.Directory, log *slog.Logger) {
	mints := desc("mintdir", "mints", "Mints in the directory, by status.", "status")
	incidents := desc("mintdir", "incidents_open", "Mints with an open incident (offline after being up).")
	lag := desc("mintdir", "probe_lag_seconds", "How far the prober is behind its schedule: the oldest overdue check's delay.")
	last := desc("mintdir", "last_probe_cycle_timestamp_seconds", "When the prober last finished a cycle (Unix time); absent before the first.")
	m.Register(collector{descs: []*prometheus.Desc{mints, incidents, lag, last}, collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
		c := dir.Health(ctx).Checks
		ch <- gauge(lag, c.ProbeLagSeconds)
		if c.LastProbeCycleAt != nil {
			ch <- gauge(last, float64(c.LastProbeCycleAt.Unix()))
		}
		st, err := dir.Stats(ctx)
		if err != nil {
			log.Warn("metrics: mint directory stats", "err", err)
			return
		}
		for _, s := range mintdir.Statuses {
			ch <- gauge(mints, float64(st.ByStatus[s]), s)
		}
		ch <- gauge(incidents, float64(st.IncidentsOpen))
	}})
}

// WatchFaucet reports the faucet's ledger (persistent totals, so its
// counters survive restarts), its wallet and its mint.
func (m *Metrics) WatchFaucet(f *faucet.Service, log *slog.Logger) {
	paid := desc("faucet", "paid_sats_total", "Sats paid out to testers (fees not included).")
	fees := desc("faucet", "fees_sats_total", "Fees the faucet paid for payouts.")
	deposited := desc("faucet", "deposited_sats_total", "Sats deposited into the faucet.")
	balance := desc("faucet", "balance_sats", "The faucet wallet's balance; absent while unknown.")
	pending := desc("faucet", "pending_claims", "Claims whose payment is under way or pending (reservations held).")
	spent := desc("faucet", "daily_spent_sats", "Sats spent from today's (UTC) budget, fees and reservations included.")
	budget := desc("faucet", "daily_budget_sats", "The daily budget; absent when there is none.")
	mint := desc("faucet", "mint_state", "1 for the faucet mint's state as the wallet last saw it (ok, unreachable, incompatible, unknown), 0 for the others.", "state")
	m.Register(collector{descs: []*prometheus.Desc{paid, fees, deposited, balance, pending, spent, budget, mint},
		collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
			state := f.Health(ctx).Checks.Mint
			for _, s := range []string{"ok", "unreachable", "incompatible", "unknown"} {
				ch <- gauge(mint, boolValue(state == s), s)
			}
			st, err := f.Stats(ctx)
			if err != nil {
				log.Warn("metrics: faucet stats", "err", err)
				return
			}
			ch <- counter(paid, float64(st.TotalPaidSats))
			ch <- counter(fees, float64(st.TotalFeeSats))
			ch <- counter(deposited, float64(st.TotalDepositedSats))
			ch <- gauge(pending, float64(st.PendingClaims))
			ch <- gauge(spent, float64(st.DailySpentSats))
			if st.BalanceSats != nil {
				ch <- gauge(balance, float64(*st.BalanceSats))
			}
			if st.DailyBudgetSats != nil {
				ch <- gauge(budget, float64(*st.DailyBudgetSats))
			}
		}})
}

// WatchStore reports badger's own size figures and what the database
// really takes on disk: badger preallocates its value log sparsely, so
// the files' apparent size (what ls and badger show) can be far above it.
func (m *Metrics) WatchStore(db *kv.DB, dir string) {
	lsm := desc("store", "lsm_bytes", "Size of badger's LSM tree (SST files), as badger last measured it (every minute).")
	vlog := desc("store", "vlog_bytes", "Apparent size of badger's value log files, as badger last measured it (every minute).")
	disk := desc("store", "disk_bytes", "Disk space the database's files take (allocated blocks).")
	tables := desc("store", "lsm_tables", "SST tables per LSM level.", "level")
	m.Register(collector{descs: []*prometheus.Desc{lsm, vlog, disk, tables}, collect: func(_ context.Context, ch chan<- prometheus.Metric) {
		sz, open := db.Sizes()
		if !open {
			return
		}
		ch <- gauge(lsm, float64(sz.LSM))
		ch <- gauge(vlog, float64(sz.ValueLog))
		if n, err := diskUsage(dir); err == nil {
			ch <- gauge(disk, float64(n))
		}
		for level, n := range sz.Tables {
			ch <- gauge(tables, float64(n), strconv.Itoa(level))
		}
	}})
}

// diskUsage sums the blocks allocated to the files under dir.
func diskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return nil // removed meanwhile (compaction)
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	return n, err
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
