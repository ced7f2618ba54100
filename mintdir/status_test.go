package mintdir

import (
	"net/http"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
)

func TestStatusTransitionsAndIncidents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Settings: Settings{ProbeInterval: time.Minute, SlowRTT: 300 * time.Millisecond}})
	f := newFakeMint(t, "Status Mint", pk1)
	id := e.submit(f.URL)
	if m := e.mint(id); m.Status != StatusUnknown || m.LastCheckedAt != nil {
		t.Fatalf("a new mint: %s", m.Status)
	}

	m := e.probe(id)
	if m.Status != StatusOnline || m.LastSuccessAt == nil || m.LastRTTMs == nil || m.OfflineSince != nil {
		t.Fatalf("after a good check: %+v", m)
	}

	// Two failures are a blip: still online, no incident.
	f.Misbehave(mintdirtest.Fail(500))
	firstFailure := e.clock.Now().Add(time.Minute)
	for range 2 {
		e.clock.Add(time.Minute)
		m = e.probe(id)
	}
	if m.Status != StatusOnline || m.OpenIncident != nil || m.LastError != "http_error" || m.LastRTTMs != nil {
		t.Fatalf("after 2 failures: status %s incident %v error %q", m.Status, m.OpenIncident, m.LastError)
	}
	// The third makes it offline since the first; an incident opens.
	e.clock.Add(time.Minute)
	m = e.probe(id)
	if m.Status != StatusOffline || m.OfflineSince == nil || !m.OfflineSince.Equal(firstFailure) {
		t.Fatalf("after 3 failures: %s since %v, want offline since %v", m.Status, m.OfflineSince, firstFailure)
	}
	incs, _ := e.dir.Incidents(e.ctx, m, time.Time{}, 10)
	if len(incs) != 1 || incs[0].ResolvedAt != nil || !incs[0].StartedAt.Equal(firstFailure) {
		t.Fatalf("incidents = %+v", incs)
	}
	// Open 20 minutes: rated by its length so far.
	e.clock.Add(18 * time.Minute)
	if got := incs[0].SeverityAt(e.clock.Now()); got != SeverityMajor {
		t.Fatalf("open incident after 20 min: %s", got)
	}
	// A 429 is the mint asking us to slow down, not downtime.
	f.Misbehave(mintdirtest.Fail(429))
	before := m.ChecksTotal
	m = e.probe(id)
	if m.Status != StatusOffline || m.ChecksTotal != before {
		t.Fatalf("a 429 changed things: %s, checks %d → %d", m.Status, before, m.ChecksTotal)
	}
	// Back up: the incident closes with a severity.
	f.Misbehave(nil)
	e.clock.Add(time.Minute)
	m = e.probe(id)
	if m.Status != StatusOnline || m.OpenIncident != nil || m.OfflineSince != nil || m.Failures != 0 {
		t.Fatalf("after recovery: %+v", m)
	}
	incs, _ = e.dir.Incidents(e.ctx, m, time.Time{}, 10)
	if len(incs) != 1 || incs[0].ResolvedAt == nil || incs[0].Severity != SeverityMajor ||
		incs[0].Duration(e.clock.Now()) != 21*time.Minute {
		t.Fatalf("resolved incident = %+v", incs)
	}
	if m.Summary.Incidents7d != 1 || m.Summary.Incidents30d != 1 {
		t.Fatalf("summary incidents %d/%d", m.Summary.Incidents7d, m.Summary.Incidents30d)
	}

	// Slow answers make it degraded; so does minting disabled.
	f.Misbehave(func(w http.ResponseWriter, r *http.Request) bool { time.Sleep(350 * time.Millisecond); return false }) // the probe times answers on the wall clock
	e.clock.Add(time.Minute)
	if m = e.probe(id); m.Status != StatusDegraded {
		t.Fatalf("slow mint: %s (rtt %v)", m.Status, *m.LastRTTMs)
	}
	f.Misbehave(nil)
	e.clock.Add(time.Minute)
	if m = e.probe(id); m.Status != StatusOnline {
		t.Fatalf("fast again: %s", m.Status)
	}
	f.Set("nuts", map[string]any{"4": map[string]any{"methods": []any{[]any{"bolt11", "sat"}}, "disabled": true},
		"5": map[string]any{"methods": []any{[]any{"bolt11", "sat"}}}})
	e.clock.Add(time.Minute)
	if m = e.probe(id); m.Status != StatusDegraded || m.Features.SupportsBolt11 {
		t.Fatalf("minting disabled: %s %+v", m.Status, m.Features)
	}

	// Quick outage: minor. Then 30 days offline: abandoned, critical.
	f.Misbehave(mintdirtest.Fail(502))
	for range 3 {
		e.clock.Add(time.Minute)
		e.probe(id)
	}
	f.Misbehave(nil)
	e.clock.Add(time.Minute)
	e.probe(id)
	incs, _ = e.dir.Incidents(e.ctx, m, time.Time{}, 10)
	if len(incs) != 2 || incs[0].Severity != SeverityMinor || incs[0].Duration(e.clock.Now()) != 3*time.Minute {
		t.Fatalf("short outage: %+v", incs)
	}
	f.Misbehave(mintdirtest.Fail(503))
	for range 3 {
		e.clock.Add(time.Hour)
		m = e.probe(id)
	}
	e.clock.Add(5 * time.Hour)
	incs, _ = e.dir.Incidents(e.ctx, m, time.Time{}, 10)
	if incs[0].ResolvedAt != nil || incs[0].SeverityAt(e.clock.Now()) != SeverityCritical {
		t.Fatalf("open after 7 h: %+v", incs[0])
	}
	e.clock.Add(30 * 24 * time.Hour)
	if m = e.probe(id); m.Status != StatusAbandoned {
		t.Fatalf("30 days offline: %s", m.Status)
	}
	f.Misbehave(nil)
	if m = e.probe(id); m.Status == StatusAbandoned || m.Status == StatusOffline {
		t.Fatalf("any success returns: %s", m.Status)
	}
	if incs, _ = e.dir.Incidents(e.ctx, m, time.Time{}, 10); incs[0].Severity != SeverityCritical {
		t.Fatalf("long incident closed as %s", incs[0].Severity)
	}
	// Paging: before the newest incident's start, one fewer.
	older, _ := e.dir.Incidents(e.ctx, m, incs[0].StartedAt, 10)
	if len(older) != len(incs)-1 {
		t.Fatalf("paging: %d before the newest, want %d", len(older), len(incs)-1)
	}
}

func TestAMintNeverUpGoesOfflineWithoutAnIncident(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	f := newFakeMint(t, "Never", pk1)
	f.Misbehave(mintdirtest.Fail(500))
	id := e.submit(f.URL)
	var m *Mint
	for range 3 {
		e.clock.Add(time.Minute)
		m = e.probe(id)
	}
	if m.Status != StatusOffline || m.OpenIncident != nil {
		t.Fatalf("status %s incident %v", m.Status, m.OpenIncident)
	}
	if incs, _ := e.dir.Incidents(e.ctx, m, time.Time{}, 10); len(incs) != 0 {
		t.Fatalf("incidents: %v", incs)
	}
}
