package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/httpapi/mintdirapi"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
	"github.com/outpost-relay/outpost/web"
)

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// site is outpost as serve wires it, less the faucet (whose page the
// whole-program tests cover): one store, the real relay, ban list and mint
// directory with their REST routers, and the pages in front.
type site struct {
	t     testing.TB
	url   string
	api   http.Handler // the relay and the services without the pages
	st    *store.Store
	dir   *mintdir.Directory
	bans  *banlist.Service
	relay *relay.Relay
	ctx   context.Context
}

type siteOptions struct {
	allowPrivateIcons bool
	rateLimit         int // pages per minute per client; 0: none
	submitPerHour     int
	bootstrapKey      bool // the ban list's bootstrap key is shown as set
	// auditor makes the directory's auditor on the store (nil: audits off).
	auditor func(*store.Store) *audit.Auditor
}

func newSite(t testing.TB, o siteOptions) *site {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	st := storetest.Open(t, storetest.Options{})
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	list := policies.NewBanList()
	rl := relay.New(relay.Config{Store: st, BanList: list, Log: quiet(), PublicURL: "http://outpost.test", ServicePub: pk, Name: "Test relay"})
	bl, err := banlist.New(banlist.Config{Settings: banlist.Settings{AdminKey: "admin-key-0123456789"},
		DB: st.DB, Events: st.Events, List: list, Publish: rl.Publish, SecretKey: sk, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var aud *audit.Auditor
	var audits func(string) (mintdir.AuditSummary, error)
	var apiAudits mintdirapi.Audits
	if o.auditor != nil {
		aud = o.auditor(st)
		apiAudits = aud
		audits = func(u string) (mintdir.AuditSummary, error) {
			s, err := aud.Summary(u)
			return mintdir.AuditSummary(s), err
		}
	}
	dir := mintdir.New(mintdir.Config{Settings: mintdir.Settings{ProbeInterval: time.Hour, ProbeTimeout: 2 * time.Second, AllowPrivate: true},
		DB: st.DB, Events: st.Events, Log: quiet(), Audits: audits})
	services := []httpapi.Service{
		{Name: "banlist", Mount: "/banlist", Routes: banlistapi.Routes(banlistapi.Config{Service: bl, Log: quiet()})},
		{Name: "mintdir", Mount: "/mintdir", Routes: mintdirapi.Routes(mintdirapi.Config{Settings: mintdirapi.Settings{SubmitPerHour: o.submitPerHour},
			Directory: dir, Log: quiet(), Audits: apiAudits})},
	}
	root := httpapi.New(httpapi.Config{Relay: rl, Services: services, Log: quiet(), Index: map[string]string{"name": "Test relay"}})
	var limit *ratelimit.Limiter
	if o.rateLimit > 0 {
		limit = ratelimit.New(o.rateLimit, time.Minute, nil)
	}
	pages, err := web.New(web.Config{Log: quiet(), PublicURL: "http://outpost.test", RelayURL: "ws://outpost.test",
		Banlist: web.Service{Mount: "/banlist", API: services[0].Routes}, Mintdir: web.Service{Mount: "/mintdir", API: services[1].Routes},
		RateLimit: limit, AllowPrivateIcons: o.allowPrivateIcons, BootstrapKey: o.bootstrapKey})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pages.Handler(root))
	t.Cleanup(srv.Close)
	return &site{t: t, url: srv.URL, api: root, st: st, dir: dir, bans: bl, relay: rl, ctx: ctx}
}

// response is an answer read whole.
type response struct {
	status int
	header http.Header
	body   string
}

// get requests path from the site as a browser would (or with the given
// Accept), without following redirects.
func (s *site) get(path, accept string) response {
	s.t.Helper()
	return s.do(http.MethodGet, path, accept, "", nil)
}

func (s *site) do(method, path, accept, contentType string, body io.Reader) response {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, method, s.url+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// submitForm posts the directory's add-a-mint form.
func (s *site) submitForm(mintURL string) response {
	s.t.Helper()
	return s.do(http.MethodPost, "/mintdir/", browserAccept, "application/x-www-form-urlencoded",
		strings.NewReader(url.Values{"mint_url": {mintURL}}.Encode()))
}

// addMint submits u through the form and probes it once; it returns the id.
func (s *site) addMint(u string) string {
	s.t.Helper()
	r := s.submitForm(u)
	if r.status != http.StatusSeeOther {
		s.t.Fatalf("submit %s: %d %s", u, r.status, r.body)
	}
	loc, _ := url.Parse(r.header.Get("Location"))
	id := strings.TrimPrefix(loc.Path, "/mintdir/mint/")
	if err := s.dir.Probe(s.ctx, id); err != nil {
		s.t.Fatalf("probe: %v", err)
	}
	return id
}
