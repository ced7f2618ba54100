package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/ops/metrics"
)

// metricsOff is --metrics-addr's value for no /metrics at all.
const metricsOff = "off"

// observe wraps each REST service with its metrics and, with --access-log,
// the access log.
func observe(d deps) func(service, mount string) func(http.Handler) http.Handler {
	return func(service, mount string) func(http.Handler) http.Handler {
		instrument := d.metrics.HTTP(service, mount)
		if !d.cfg.AccessLog {
			return instrument
		}
		access := httpapi.AccessLog(d.log.With("service", service))
		return func(next http.Handler) http.Handler { return instrument(access(next)) }
	}
}

// watchMetrics registers the scrape-time figures of what every service shares.
func watchMetrics(d deps, services []httpapi.Service, restLimit *ratelimit.Limiter) {
	d.metrics.WatchRelay(d.relay, restLimit)
	d.metrics.WatchStore(d.store.DB, filepath.Join(d.cfg.DataDir, "badger"))
	var health []metrics.ServiceStatus
	for _, s := range services {
		st := metrics.ServiceStatus{Service: s.Name}
		if s.Health != nil { // none for a service this node does not run (faucet_elsewhere)
			st.Status = func(ctx context.Context) string { return s.Health(ctx).Status }
		}
		health = append(health, st)
	}
	d.metrics.WatchHealth(health)
}

// mainListenerMetrics is the /metrics handler of the main listener: there
// unless --metrics-addr names another address (or off).
func mainListenerMetrics(d deps) http.Handler {
	if d.cfg.MetricsAddr != "" {
		return nil
	}
	return d.metrics.Handler()
}

// listenMetrics binds --metrics-addr (before anything is served, so a busy
// port fails start-up) and returns the job that serves /metrics there until
// the background jobs stop; nil when metrics are on the main listener or off.
func listenMetrics(d deps) (func(context.Context), error) {
	if d.cfg.MetricsAddr == "" || d.cfg.MetricsAddr == metricsOff {
		return nil, nil
	}
	ln, err := net.Listen("tcp", d.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--metrics-addr, OUTPOST_METRICS_ADDR): %w", d.cfg.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	d.log.Info("metrics listening", "addr", ln.Addr().String())
	return func(ctx context.Context) {
		go srv.Serve(ln)
		<-ctx.Done()
		srv.Close()
	}, nil
}

// buildRevision is the VCS revision go build stamped into the binary.
func buildRevision() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
