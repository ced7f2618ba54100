package mintdir

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
)

func TestFailureModesAreRecordedChecks(t *testing.T) {
	t.Parallel()
	// Every check has the usual 2 s: under load a check of a local server
	// can take longer than a short timeout, and would be recorded as a
	// timeout whatever the server did. (A mint that never answers is
	// TestSlowMintIsATimeoutCheck's, with a short timeout.)
	e := newEnv(t, Config{})
	f := newFakeMint(t, "Flaky", pk1)
	id := e.submit(f.URL)
	e.probe(id)
	// Made once, ahead: building 10 MB in the handler can take longer than
	// the timeout on a loaded machine, and the check would time out.
	tooLarge := []byte(`{"name":"` + strings.Repeat("x", 10<<20) + `"}`)
	tests := []struct {
		name string
		b    func(w http.ResponseWriter, r *http.Request) bool
		kind string
	}{
		{"500", mintdirtest.Fail(500), "http_error"},
		{"HTML", func(w http.ResponseWriter, r *http.Request) bool {
			fmt.Fprint(w, "<html>maintenance</html>")
			return true
		}, "html"},
		{"invalid JSON", func(w http.ResponseWriter, r *http.Request) bool { fmt.Fprint(w, `{"name":`); return true }, "invalid_json"},
		{"not a mint", func(w http.ResponseWriter, r *http.Request) bool { fmt.Fprint(w, `{"status":"ok"}`); return true }, "invalid_info"},
		{"10 MB", func(w http.ResponseWriter, r *http.Request) bool {
			w.Write(tooLarge)
			return true
		}, "body_too_large"},
		{"redirect loop", func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
			return true
		}, "redirect_loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.Misbehave(tt.b)
			e.clock.Add(time.Minute)
			m := e.probe(id)
			checks, err := e.dir.Checks(e.ctx, m, e.clock.Now().Add(-time.Second), e.clock.Now().Add(time.Second), 10)
			if err != nil || len(checks) != 1 {
				t.Fatalf("checks: %v %v", checks, err)
			}
			if c := checks[0]; c.OK || c.ErrKind != tt.kind || m.LastError != tt.kind {
				t.Fatalf("check %+v, last error %q; want kind %s", c, m.LastError, tt.kind)
			}
		})
	}
	f.Misbehave(nil)
	e.clock.Add(time.Minute)
	if m := e.probe(id); m.Status != StatusOnline {
		t.Fatalf("back: %s", m.Status)
	}
	checks, _ := e.dir.Checks(e.ctx, e.mint(id), time.Time{}, e.clock.Now().Add(time.Second), 100)
	if len(checks) != len(tests)+2 || !checks[0].OK || checks[1].OK {
		t.Fatalf("%d checks stored, want %d, newest first", len(checks), len(tests)+2)
	}
}

// TestSlowMintIsATimeoutCheck: a mint that never answers is a failed check
// of kind timeout. It times out however long the timeout is, so it has a
// short one of its own rather than waiting out the others' 2 s.
func TestSlowMintIsATimeoutCheck(t *testing.T) {
	t.Parallel()
	var cfg Config
	cfg.ProbeTimeout = 200 * time.Millisecond
	e := newEnv(t, cfg)
	f := newFakeMint(t, "Slow", pk1)
	f.Misbehave(func(w http.ResponseWriter, r *http.Request) bool {
		<-r.Context().Done() // the probe gave up
		return true
	})
	id := e.submit(f.URL)
	m := e.probe(id)
	checks, err := e.dir.Checks(e.ctx, m, e.clock.Now().Add(-time.Second), e.clock.Now().Add(time.Second), 10)
	if err != nil || len(checks) != 1 {
		t.Fatalf("checks: %v %v", checks, err)
	}
	if c := checks[0]; c.OK || c.ErrKind != "timeout" || m.LastError != "timeout" {
		t.Fatalf("check %+v, last error %q; want kind timeout", c, m.LastError)
	}
}

func TestMetadataSnapshotsAndHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	f := newFakeMint(t, "Hist Mint", pk1)
	id := e.submit(f.URL)
	m := e.probe(id)
	meta, info, ok, err := e.dir.Metadata(e.ctx, m)
	if err != nil || !ok || info.Name != "Hist Mint" || info.Pubkey != pk1 || len(meta.Keysets) != 1 || meta.Keysets[0].Unit != "sat" {
		t.Fatalf("metadata: %v %v %+v %+v", ok, err, info, meta)
	}
	if m.Name != "Hist Mint" || m.PubKey != pk1 || m.Features == nil || !m.Features.SupportsBolt11 {
		t.Fatalf("catalogue record: %+v", m)
	}

	// The mint's clock moves on every answer: no new entry.
	f.Set("time", 1700000999)
	e.clock.Add(time.Minute)
	e.probe(id)
	f.Set("name", "Renamed Mint")
	e.clock.Add(time.Minute)
	e.probe(id)
	f.Set("version", "fake/2.0")
	e.clock.Add(time.Minute)
	m = e.probe(id)

	h, err := e.dir.History(e.ctx, m, time.Time{}, 10)
	if err != nil || len(h) != 3 {
		t.Fatalf("history: %d entries (%v), want 3", len(h), err)
	}
	if h[0].ChangeType != ChangeVersion || h[0].Version != "fake/2.0" || h[1].ChangeType != ChangeInfo || h[2].ChangeType != ChangeInitial {
		t.Fatalf("change types %s %s %s", h[0].ChangeType, h[1].ChangeType, h[2].ChangeType)
	}
	if d := h[1].Diff["name"]; d.Old != "Hist Mint" || d.New != "Renamed Mint" || len(h[1].Diff) != 1 {
		t.Fatalf("rename diff = %v", h[1].Diff)
	}
	if m.Name != "Renamed Mint" || m.ServerTime == nil || m.ServerTime.Unix() != 1700000999 {
		t.Fatalf("after the rename: name %q server time %v", m.Name, m.ServerTime)
	}
	older, _ := e.dir.History(e.ctx, m, h[0].FetchedAt, 10)
	if len(older) != 2 {
		t.Fatalf("history before the newest: %d", len(older))
	}
}

func TestSameMintUnderTwoURLsBecomesOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	f := newFakeMint(t, "Twin", pk1)
	a := e.submit(f.URL)
	e.probe(a)
	alias := strings.Replace(f.URL, "127.0.0.1", "localhost", 1)
	res, err := e.dir.Submit(e.ctx, alias+"/")
	if err != nil || res.Exists || res.ID.String() == a {
		t.Fatalf("second URL: %+v %v", res, err)
	}
	if err := e.dir.Probe(e.ctx, res.ID.String()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, res.ID.String()} {
		if m := e.mint(id); m.ID.String() != a || len(m.URLs) != 2 {
			t.Fatalf("%s resolves to %s with %v", id, m.ID, m.URLList())
		}
	}
	if m, err := e.dir.GetByURL(e.ctx, alias); err != nil || m.ID.String() != a {
		t.Fatalf("by the second URL: %v %v", m, err)
	}
	if n, _ := e.dir.Count(); n != 1 {
		t.Fatalf("%d mints, want 1", n)
	}
	if m := e.mint(a); m.URLType(m.URLs[1].URL) != URLMirror {
		t.Fatalf("the merged URL is a %s", m.URLType(m.URLs[1].URL))
	}
	if again, _ := e.dir.Submit(e.ctx, alias); !again.Exists || again.ID.String() != a {
		t.Fatalf("resubmitting the merged URL: %+v", again)
	}

	// URLs the mint advertises in NUT-06 join its list; .onion ones are tor.
	g := newFakeMint(t, "Other", pk2)
	f.Set("urls", []any{f.URL, g.URL + "/", "http://mintabcdef.onion"})
	e.clock.Add(time.Minute)
	m := e.probe(a)
	if len(m.URLs) != 4 || m.URLType("http://mintabcdef.onion") != URLTor {
		t.Fatalf("urls after NUT-06: %v", m.URLList())
	}
	if res, _ := e.dir.Submit(e.ctx, g.URL); !res.Exists || res.ID.String() != a {
		t.Fatalf("an advertised URL is known: %+v", res)
	}
}

func TestSubmitRefusesBadAndPrivateURLs(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.TempDir(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := New(Config{DB: st.DB, Events: st.Events, Log: quiet()})
	ctx := context.Background()
	for _, u := range []string{"ftp://mint.example", "not a url", "http://127.0.0.1:3338", "http://localhost:3338",
		"http://10.0.0.1", "http://[::1]:80", "http://169.254.169.254", "http://abc.onion", "https://u:p@mint.example",
		"https://no-such-host.invalid"} {
		_, err := d.Submit(ctx, u)
		if e := outpost.AsError(err); e == nil || e.Code != "invalid_mint_url" || e.Kind != outpost.Invalid {
			t.Errorf("Submit(%q) = %v, want invalid_mint_url", u, err)
		}
	}
	if n, _ := d.Count(); n != 0 {
		t.Fatalf("%d mints added", n)
	}
}

func TestProbingCarriesOnAfterARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, st, Config{})
	f := newFakeMint(t, "Durable", pk1)
	id := e.submit(f.URL)
	e.probe(id)
	e.clock.Add(time.Minute)
	e.probe(id)
	last := e.clock.Now()
	st.Close()

	st, err = store.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e2 := newEnvOn(t, st, Config{})
	targets, _ := e2.dir.targets(e2.ctx)
	if len(targets) != 1 || targets[0].ID != id || !targets[0].LastChecked.Equal(last) {
		t.Fatalf("targets after restart: %+v, want last check %v", targets, last)
	}
	e2.clock.Set(last.Add(time.Minute))
	if n := e2.dir.ProbeAll(e2.ctx); n != 1 {
		t.Fatalf("cycle probed %d", n)
	}
	m := e2.mint(id)
	h, _ := e2.dir.History(e2.ctx, m, time.Time{}, 10)
	if m.ChecksTotal != 3 || len(h) != 1 {
		t.Fatalf("after restart: %d checks, %d history entries", m.ChecksTotal, len(h))
	}
}
