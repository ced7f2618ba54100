package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape GETs a /metrics page and parses it; the raw text is kept for promtool.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, raw)
	}
	families, err := new(expfmt.TextParser).TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return families, string(raw)
}

// value is the sample of family name whose labels include want; -1 when
// there is none.
func value(families map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			match = match && labels[want[i]] == want[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// promtoolCheck runs Debian's promtool on a scrape; .ci/ops-tools.sh
// installs it, and without it the check is skipped with a message.
func promtoolCheck(t *testing.T, raw string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool is not installed (bash .ci/ops-tools.sh installs it): the format check is skipped")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "check", "metrics")
	cmd.Stdin = strings.NewReader(raw)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// What an operator asks first, on a real scrape of a working outpost: the
// relay's answers by prefix and its latencies, REST requests by route
// pattern and status, rate-limit refusals, ban-list sizes, mint checks,
// faucet claims and ledger, the store; in a format promtool accepts, with
// no public key, URL or IP address in any label.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_RATE_LIMIT": "12", "OUTPOST_ACCESS_LOG": "true",
		"OUTPOST_LOG_LEVEL": "info", "OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_TRUSTED_PROXIES": "127.0.0.1/32"})
	f := inst.url + "/faucet"

	// The relay: accepted, duplicate, blocked (banned author), invalid, and a REQ.
	r := connect(t, inst)
	sk, bannedSK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	bannedPK, _ := nostr.GetPublicKey(bannedSK)
	if code, _ := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": bannedPK, "reason": "spam"}, admin()...); code != 200 && code != 201 {
		t.Fatalf("ban: %d", code)
	}
	ev := note(t, sk, "hello metrics", 1)
	if err := publish(t, r, ev); err != nil {
		t.Fatal(err)
	}
	publish(t, r, ev) // duplicate
	wantBlocked(t, publish(t, r, note(t, bannedSK, "spam", 1)), "banned")
	bad := note(t, sk, "tampered", 1)
	bad.Content = "changed after signing"
	if err := publish(t, r, bad); err == nil {
		t.Fatal("a tampered event was accepted")
	}
	query(t, r, nostr.Filter{Kinds: []int{1}})

	// The mint directory lists and checks the embedded test mint (a submit
	// finds it known: 200); the faucet pays a claim.
	_, cfg := call(t, "GET", f+"/config", nil)
	if code, _ := call(t, "POST", inst.url+"/mintdir/mints/submit", map[string]any{"mint_url": cfg["mint_url"]}); code != 200 {
		t.Fatalf("submit: %d", code)
	}
	userSK := nostr.GeneratePrivateKey()
	_, login := signedCall(t, userSK, "POST", f+"/auth/login", nil)
	bearer := []string{"Authorization", "Bearer " + fmt.Sprint(login["token"])}
	_, q := call(t, "POST", f+"/claim/quote", map[string]any{"method": "cashu"}, bearer...)
	if code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, bearer...); code != 200 {
		t.Fatalf("confirm: %d %v", code, res)
	}

	// REST: a route with a parameter, an unknown path, a method no router
	// knows, a blocked client (behind the trusted proxy), and the per-IP limit.
	call(t, "GET", inst.url+"/banlist/blocked/pubkeys/"+bannedPK, nil)
	call(t, "GET", inst.url+"/banlist/no/such/path/"+bannedPK, nil)
	call(t, "GET", inst.url+"/wp-login.php", nil) // outside every service
	if code, _ := call(t, "PROPFIND", inst.url+"/banlist/blocked/words", nil); code != 405 {
		t.Fatalf("PROPFIND: %d", code)
	}
	if code, body := call(t, "POST", inst.url+"/banlist/admin/block-ip", map[string]any{"ip": "198.51.100.7", "reason": "scanner"}, admin()...); code != 200 && code != 201 {
		t.Fatalf("block-ip: %d %v", code, body)
	}
	if code, _ := call(t, "GET", inst.url+"/mintdir/mints", nil, "X-Forwarded-For", "198.51.100.7"); code != 403 {
		t.Fatalf("a blocked client: %d", code)
	}
	for _, accept := range []string{"text/html", "application/nostr+json"} { // the pages, NIP-11
		for _, path := range []string{"/", "/mintdir/"} {
			if code, _ := call(t, "GET", inst.url+path, nil, "X-Forwarded-For", "198.51.100.7", "Accept", accept); code != 403 {
				t.Errorf("a blocked client at %s (%s): %d", path, accept, code)
			}
		}
	}
	limited := false
	for range 20 {
		if code, _ := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code == 429 {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("the REST rate limit never answered 429")
	}

	var m map[string]*dto.MetricFamily
	var raw string
	testkit.WaitFor(t, 15*time.Second, "the mint check in the metrics", func() bool {
		m, raw = scrape(t, inst.url+"/metrics")
		return value(m, "outpost_mintdir_checks_total", "outcome", "ok", "error_kind", "none") >= 1
	})
	promtoolCheck(t, raw)

	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"outpost_relay_events_total", []string{"outcome", "accepted", "reason", "none"}, 1},
		{"outpost_relay_events_total", []string{"outcome", "duplicate", "reason", "duplicate"}, 1},
		{"outpost_relay_events_total", []string{"outcome", "refused", "reason", "blocked"}, 1},
		{"outpost_relay_events_total", []string{"outcome", "refused", "reason", "invalid"}, 1},
		{"outpost_relay_event_duration_seconds", nil, 4},
		{"outpost_relay_req_duration_seconds", nil, 1},
		{"outpost_relay_write_batch_events", nil, 1},
		{"outpost_relay_connections", nil, 1},
		{"outpost_http_requests_total", []string{"service", "banlist", "route", "/blocked/pubkeys/{pubkey}", "method", "GET", "code", "200"}, 1},
		{"outpost_http_requests_total", []string{"service", "banlist", "route", "unmatched", "code", "404"}, 1},
		{"outpost_http_requests_total", []string{"service", "outpost", "route", "unmatched", "method", "GET", "code", "404"}, 1},
		{"outpost_http_requests_total", []string{"service", "banlist", "route", "/blocked/words", "code", "429"}, 1},
		{"outpost_http_requests_total", []string{"service", "faucet", "route", "/claim/confirm", "method", "POST", "code", "200"}, 1},
		{"outpost_http_requests_total", []string{"service", "banlist", "route", "/blocked/words", "method", "other", "code", "405"}, 1},
		{"outpost_http_requests_total", []string{"service", "mintdir", "route", "/mints", "method", "GET", "code", "403"}, 1},
		{"outpost_http_request_duration_seconds", []string{"service", "mintdir", "route", "/mints/submit"}, 1},
		{"outpost_rate_limited_total", []string{"limit", "rest"}, 1},
		{"outpost_banlist_active_bans", nil, 1},
		{"outpost_mintdir_mints", []string{"status", "online"}, 1},
		{"outpost_faucet_claims_total", []string{"method", "cashu", "state", "paid"}, 1},
		{"outpost_faucet_paid_sats_total", nil, 1},
		{"outpost_faucet_balance_sats", nil, 1},
		{"outpost_faucet_mint_state", []string{"state", "ok"}, 1},
		{"outpost_service_health", []string{"service", "faucet", "status", "ok"}, 1},
		{"outpost_store_disk_bytes", nil, 1},
		{"outpost_build_info", nil, 1},
		{"go_goroutines", nil, 1},
		{"process_resident_memory_bytes", nil, 1},
	} {
		if got := value(m, c.name, c.labels...); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	if got := value(m, "outpost_relay_events_total", "outcome", "accepted", "reason", "none"); got != 1 {
		t.Errorf("accepted events = %v, want exactly 1", got)
	}
	for _, service := range []string{"banlist", "outpost"} { // one 404 under a service, one outside: each once
		if got := value(m, "outpost_http_requests_total", "service", service, "code", "404"); got != 1 {
			t.Errorf("404s counted for %s = %v, want exactly 1", service, got)
		}
	}

	// Bounded labels: nothing a client chooses becomes a label value.
	unbounded := regexp.MustCompile(`[0-9a-f]{64}|npub1|127\.0\.0\.1|https?:`)
	for name, fam := range m {
		for _, s := range fam.Metric {
			for _, l := range s.Label {
				if unbounded.MatchString(l.GetValue()) {
					t.Errorf("%s has the label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}

	// The access log: one line per REST request, with the client IP.
	for _, line := range []string{`msg=access service=banlist method=GET path=/banlist/blocked/words status=429`,
		`msg=access service=mintdir method=GET path=/mintdir/mints status=403`} {
		if !strings.Contains(inst.logs.String(), line) {
			t.Errorf("no access log line %s:\n%s", line, inst.logs)
		}
	}
}

// OUTPOST_METRICS_ADDR moves /metrics to a listener of its own; the main
// listener then has none. "off" serves it nowhere.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_METRICS_ADDR": "127.0.0.1:0", "OUTPOST_LOG_LEVEL": "info"})
	addr := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`).FindStringSubmatch(inst.logs.String())
	if addr == nil {
		t.Fatalf("no metrics listener in the logs:\n%s", inst.logs)
	}
	m, raw := scrape(t, "http://"+addr[1]+"/metrics")
	promtoolCheck(t, raw)
	if value(m, "outpost_relay_connections") < 0 {
		t.Fatal("the metrics listener serves no outpost metrics")
	}
	if code, _ := call(t, "GET", inst.url+"/metrics", nil); code != 404 {
		t.Fatalf("main listener /metrics: %d, want 404", code)
	}

	off := start(t, t.TempDir(), map[string]string{"OUTPOST_METRICS_ADDR": "off"})
	if code, _ := call(t, "GET", off.url+"/metrics", nil); code != 404 {
		t.Fatalf("/metrics with OUTPOST_METRICS_ADDR=off: %d, want 404", code)
	}
}

// A node of a several-node deployment runs no faucet (OUTPOST_FAUCET_PRIMARY):
// its faucet has no health, and a scrape of /metrics must neither crash the
// node nor report a faucet health it does not have, while the services it
// runs are reported as ever.
func TestMetricsFaucetElsewhere(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_FAUCET_PRIMARY": "http://127.0.0.1:9/faucet"})
	for range 2 { // the second scrape proves the node outlived the first
		m, raw := scrape(t, inst.url+"/metrics")
		promtoolCheck(t, raw)
		if got := value(m, "outpost_service_health", "service", "banlist", "status", "ok"); got != 1 {
			t.Errorf("banlist health ok = %v, want 1", got)
		}
		if got := value(m, "outpost_service_health", "service", "faucet"); got != -1 {
			t.Errorf("a node without a faucet reports a faucet health (%v)", got)
		}
	}
	waitHealthy(t, inst.url, 10*time.Second)
}
