// Package metrics is outpost's Prometheus instrumentation. Most figures are
// read at scrape time from what the services already expose (relay stats,
// health, the faucet's ledger, badger's sizes); the few that cannot be read
// afterwards — relay answers and their latency, REST requests, mint checks,
// faucet claim outcomes — are counted by small hooks the services call.
//
// Label values are bounded: reasons are NIP-01 prefixes, routes are chi
// route patterns, methods and statuses come from fixed sets. No public key,
// URL or IP address is ever a label.
package metrics

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "outpost"

// Metrics is outpost's registry and the instruments the hooks report to.
type Metrics struct {
	reg *prometheus.Registry

	relayEvents   *prometheus.CounterVec
	relayEventDur prometheus.Histogram
	relayReqDur   prometheus.Histogram
	relayBatches  prometheus.Histogram
	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	mintChecks    *prometheus.CounterVec
	faucetClaims  *prometheus.CounterVec
}

// latencyBuckets span a cached read (sub-millisecond) to a stalled store.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns the registry with the Go runtime and process collectors and
// outpost's own instruments; version is reported as outpost_build_info.
func New(version, revision string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg,
		relayEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "relay", Name: "events_total",
			Help: "EVENT messages answered with OK, by outcome (accepted, duplicate, refused) and the refusal's NIP-01 prefix."},
			[]string{"outcome", "reason"}),
		relayEventDur: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "relay", Name: "event_duration_seconds",
			Help: "Time from an EVENT message to its OK answer.", Buckets: latencyBuckets}),
		relayReqDur: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "relay", Name: "req_duration_seconds",
			Help: "Time from a REQ message to its EOSE (stored events sent).", Buckets: latencyBuckets}),
		relayBatches: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "relay", Name: "write_batch_events",
			Help:    "Events in each transaction the relay's writer committed (group commit: what arrived while the commit before ran, up to 256).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9)}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "http", Name: "requests_total",
			Help: "REST requests answered, by service, route pattern, method and status code."},
			[]string{"service", "route", "method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
			Help: "Time to answer a REST request, by service, route pattern and method.", Buckets: latencyBuckets},
			[]string{"service", "route", "method"}),
		mintChecks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "mintdir", Name: "checks_total",
			Help: "Mint checks stored by this process, by outcome (ok, failed, rate_limited) and error kind."},
			[]string{"outcome", "error_kind"}),
		faucetClaims: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "faucet", Name: "claims_total",
			Help: "Faucet claims that reached a state (paid, pending, failed) in this process, by payout method."},
			[]string{"method", "state"}),
	}
	reg.MustRegister(m.relayEvents, m.relayEventDur, m.relayReqDur, m.relayBatches, m.httpRequests, m.httpDuration, m.mintChecks, m.faucetClaims)
	build := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info",
		Help:        "Always 1: the running outpost's version and the VCS revision it was built from.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision}})
	build.Set(1)
	reg.MustRegister(build)
	return m
}

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError})
}

// Register adds a collector (the scrape-time ones in this package).
func (m *Metrics) Register(c prometheus.Collector) { m.reg.MustRegister(c) }

// --- relay (relay.Observer) ---

// relayReasons are the NIP-01 machine-readable prefixes; any other becomes "other".
var relayReasons = map[string]bool{"duplicate": true, "pow": true, "blocked": true, "rate-limited": true,
	"invalid": true, "restricted": true, "mute": true, "error": true, "auth-required": true, "unsupported": true,
	"replaced": true} // strfry's, and ours: an older version of an address than the one held

// EventAnswered counts an OK answer by outcome and prefix.
func (m *Metrics) EventAnswered(ok bool, reason string, took time.Duration) {
	prefix := "none"
	if reason != "" {
		prefix, _, _ = strings.Cut(reason, ":")
		if !relayReasons[prefix] {
			prefix = "other"
		}
	}
	outcome := "refused"
	switch {
	case ok && prefix == "duplicate":
		outcome = "duplicate"
	case ok:
		outcome = "accepted"
	}
	m.relayEvents.WithLabelValues(outcome, prefix).Inc()
	m.relayEventDur.Observe(took.Seconds())
}

// ReqAnswered records a REQ's time to EOSE.
func (m *Metrics) ReqAnswered(took time.Duration) { m.relayReqDur.Observe(took.Seconds()) }

// BatchCommitted records the events of a transaction the writer committed.
func (m *Metrics) BatchCommitted(events int) { m.relayBatches.Observe(float64(events)) }

// --- mint directory and faucet hooks ---

// MintCheck counts a stored mint check (mintdir.Config.OnCheck).
func (m *Metrics) MintCheck(ok, skipped bool, errKind string) {
	outcome := "failed"
	switch {
	case skipped:
		outcome = "rate_limited"
	case ok:
		outcome, errKind = "ok", "none"
	}
	if errKind == "" {
		errKind = "none"
	}
	m.mintChecks.WithLabelValues(outcome, errKind).Inc()
}

// FaucetClaim counts a claim reaching a state (faucet.Config.OnClaim).
func (m *Metrics) FaucetClaim(method, state string) {
	m.faucetClaims.WithLabelValues(method, state).Inc()
}
