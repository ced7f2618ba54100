package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
	"github.com/outpost-relay/outpost/web"
)

// scriptTag matches a script element with its attributes and content.
var scriptTag = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)

// checkNoInlineCode fails when a page carries code the CSP would refuse: a
// script without src or with content, a style element or attribute, an
// event handler attribute, a javascript: URL.
func checkNoInlineCode(t *testing.T, path, body string) {
	t.Helper()
	for _, m := range scriptTag.FindAllStringSubmatch(body, -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("%s: inline script %q", path, m[0])
		}
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`(?i)<style`), regexp.MustCompile(`(?i)\sstyle\s*=`),
		regexp.MustCompile(`(?i)<[^>]+\son[a-z]+\s*=`), regexp.MustCompile(`(?i)javascript:`)} {
		if loc := bad.FindStringIndex(body); loc != nil {
			t.Errorf("%s: %q in %q", path, bad, body[max(0, loc[0]-60):min(len(body), loc[1]+60)])
		}
	}
}

func checkPage(t *testing.T, path string, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", path, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("%s: Content-Type %q", path, ct)
	}
	if csp := r.header.Get("Content-Security-Policy"); csp != web.CSP {
		t.Errorf("%s: Content-Security-Policy %q, want %q", path, csp, web.CSP)
	}
	if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("%s: security headers missing: %v", path, r.header)
	}
}

func TestPagesRenderWithCSPAndNoInlineCode(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{})
	m := mintdirtest.NewFakeMint(t, map[string]any{"name": "Good Mint", "description": "A mint.", "motd": "All fine."})
	id := s.addMint(m.URL)
	if _, err := s.bans.Ban(s.ctx, "test", strings.Repeat("ab", 32), "spam", nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/mintdir/", "/mintdir/?status=online&sort=name", "/mintdir/mint/" + id,
		"/mintdir/mint/" + id + "?window=7d", "/mintdir/mint/" + id + "?window=30d", "/banlist/"} {
		r := s.get(path, browserAccept)
		checkPage(t, path, r, http.StatusOK)
		checkNoInlineCode(t, path, r.body)
	}
	mint := s.get("/mintdir/mint/"+id, browserAccept).body
	for _, want := range []string{"Good Mint", "All fine.", `class="strip"`, "Last checked", "No incidents recorded."} {
		if !strings.Contains(mint, want) {
			t.Errorf("mint page lacks %q", want)
		}
	}
	// The count is the list's own (the directory's /stats lags by up to 10 s).
	if list := s.get("/mintdir/", browserAccept).body; !strings.Contains(list, `href="/mintdir/mint/`+id+`"`) || !strings.Contains(list, `<p class="summary">1 mint</p>`) {
		t.Errorf("the list does not link the mint:\n%s", list)
	}
	if landing := s.get("/", browserAccept).body; !strings.Contains(landing, "ws://outpost.test") || !strings.Contains(landing, "Test relay") {
		t.Errorf("the landing page lacks the relay's address or name:\n%s", landing)
	}
}

// Clients that are not browsers get exactly what outpost answered before
// the pages existed; the negotiated answers say they vary by Accept.
func TestOnlyBrowsersGetPages(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{})
	for _, c := range []struct {
		method, path, accept, ctype, body string
		vary                              bool
	}{
		{"GET", "/", "", "", "", true},
		{"GET", "/", "*/*", "", "", true},
		{"GET", "/", "application/nostr+json", "", "", true},
		{"GET", "/", "application/nostr+json, text/html", "", "", true},
		{"GET", "/mintdir/", "application/json", "", "", true},
		{"GET", "/mintdir", "", "", "", true},
		{"GET", "/banlist/", "*/*", "", "", true},
		{"POST", "/mintdir/", "", "application/json", `{"mint_url":"x"}`, false},
		{"GET", "/mintdir/mints", browserAccept, "", "", false},
		{"GET", "/banlist/blocked/pubkeys", browserAccept, "", "", false},
		{"GET", "/qr", browserAccept, "", "", false},
		{"GET", "/health", browserAccept, "", "", false},
	} {
		name := c.method + " " + c.path + " Accept: " + c.accept
		got := s.do(c.method, c.path, c.accept, c.ctype, strings.NewReader(c.body))
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		req.Header.Set("Accept", c.accept)
		req.Header.Set("Content-Type", c.ctype)
		want := httptest.NewRecorder()
		s.api.ServeHTTP(want, req)
		if got.status != want.Code || got.header.Get("Content-Type") != want.Header().Get("Content-Type") || !sameJSON(got.body, want.Body.String()) {
			t.Errorf("%s: got %d %s %s, want %d %s %s", name, got.status, got.header.Get("Content-Type"), got.body,
				want.Code, want.Header().Get("Content-Type"), want.Body.String())
		}
		vary := false
		for _, v := range strings.Split(strings.Join(got.header.Values("Vary"), ","), ",") {
			vary = vary || strings.TrimSpace(v) == "Accept"
		}
		if vary != c.vary {
			t.Errorf("%s: Vary %q", name, got.header.Values("Vary"))
		}
	}

	// Browsers at the mount paths without the slash are sent to the page.
	if r := s.get("/mintdir?status=online", browserAccept); r.status != http.StatusFound || r.header.Get("Location") != "/mintdir/?status=online" {
		t.Errorf("GET /mintdir as a browser: %d %v", r.status, r.header)
	}

	// The relay still answers websocket upgrades at the root.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.DefaultDialer.DialContext(ctx, strings.Replace(s.url, "http", "ws", 1), http.Header{"Accept": {browserAccept}})
	if err != nil {
		t.Fatalf("websocket at /: %v", err)
	}
	c.Close()
}

// sameJSON compares two bodies, ignoring the time fields that /health and
// NIP-11 fill in per request.
func sameJSON(a, b string) bool {
	norm := regexp.MustCompile(`"time":"[^"]*"`)
	return norm.ReplaceAllString(a, "") == norm.ReplaceAllString(b, "")
}

func TestMintTextIsEscaped(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{allowPrivateIcons: true})
	m := mintdirtest.NewFakeMint(t, map[string]any{
		"name":             `<script>alert("name")</script>`,
		"description":      `<img src=x onerror=alert(1)>`,
		"description_long": `</p><script>alert("long")</script>`,
		"motd":             `"><svg onload=alert(2)>`,
		"contact":          []any{map[string]any{"method": "email", "info": `<b>bold</b>`}},
		"tos_url":          `javascript:alert(3)`,
		"icon_url":         `javascript:alert(4)`,
	})
	id := s.addMint(m.URL)

	sk := nostr.GeneratePrivateKey()
	review := nostr.Event{Kind: 38000, CreatedAt: nostr.Now(), Content: `<script>alert("review")</script>`,
		Tags: nostr.Tags{{"k", "38172"}, {"u", m.URL}, {"rating", "4"}}}
	review.Sign(sk)
	if _, err := s.st.Events.Save(s.ctx, &review); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"/mintdir/mint/" + id, "/mintdir/"} {
		r := s.get(path, browserAccept)
		checkPage(t, path, r, http.StatusOK)
		for _, raw := range []string{`<script>alert`, `</script>alert`, `<img src=x`, `<svg onload`, `="javascript:`, `<b>bold</b>`} {
			if strings.Contains(r.body, raw) {
				t.Errorf("%s: unescaped %q", path, raw)
			}
		}
		if !strings.Contains(r.body, `&lt;script&gt;alert(&#34;name&#34;)&lt;/script&gt;`) {
			t.Errorf("%s: the mint's name is not shown as text", path)
		}
	}
	page := s.get("/mintdir/mint/"+id, browserAccept).body
	for _, want := range []string{`&lt;script&gt;alert(&#34;review&#34;)&lt;/script&gt;`, `&#34;&gt;&lt;svg onload=alert(2)&gt;`, `&lt;b&gt;bold&lt;/b&gt;`, "4/5"} {
		if !strings.Contains(page, want) {
			t.Errorf("mint page lacks %q", want)
		}
	}
}

// The console lists the bootstrap key, which the API does not, only when
// one is set.
func TestConsoleKnowsTheBootstrapKey(t *testing.T) {
	t.Parallel()
	for _, set := range []bool{false, true} {
		r := newSite(t, siteOptions{bootstrapKey: set}).get("/banlist/", browserAccept)
		checkPage(t, "/banlist/", r, http.StatusOK)
		if got := strings.Contains(r.body, `data-bootstrap="set"`); got != set {
			t.Errorf("with a bootstrap key %v, the page says it is set: %v", set, got)
		}
	}
}

func TestConsoleTextIsEscaped(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{})
	if _, err := s.bans.Ban(s.ctx, "test", strings.Repeat("cd", 32), `<script>alert("ban")</script>`, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.bans.AddWord(s.ctx, "test", `<i>word</i>`); err != nil {
		t.Fatal(err)
	}
	r := s.get("/banlist/", browserAccept)
	checkPage(t, "/banlist/", r, http.StatusOK)
	if strings.Contains(r.body, `<script>alert`) || strings.Contains(r.body, `<i>word</i>`) {
		t.Errorf("unescaped text on the console page:\n%s", r.body)
	}
	for _, want := range []string{`&lt;script&gt;alert(&#34;ban&#34;)&lt;/script&gt;`, `&lt;i&gt;word&lt;/i&gt;`, "npub1"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("console page lacks %q", want)
		}
	}
	if !strings.Contains(r.body, `type="password"`) || !strings.Contains(r.body, `<label for="api-key">`) {
		t.Error("the API key field is not a labelled password field")
	}
}

func pngOf(t *testing.T, w, h int, noise bool) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{0x4b, 0x30, 0xc4, 0xff}
			if noise {
				c = color.RGBA{uint8(rand.IntN(256)), uint8(rand.IntN(256)), uint8(rand.IntN(256)), 0xff}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestIconProxy(t *testing.T) {
	t.Parallel()
	small := pngOf(t, 32, 32, false)
	logo := pngOf(t, 1500, 100, true) // a logo as mints publish them: over 1024 px and 128 KiB
	huge := pngOf(t, 700, 700, true)  // over 1 MiB
	if len(logo) <= 128<<10 || len(logo) > 1<<20 || len(huge) <= 1<<20 {
		t.Fatalf("the logo is %d bytes, the large icon %d", len(logo), len(huge))
	}
	cases := []struct {
		name        string
		ctype       string
		body        []byte
		dataURL     bool
		private     bool // the site may not fetch from loopback
		served      bool // the image, else the placeholder
		wantFetches int
	}{
		{name: "png", ctype: "image/png", body: small, served: true, wantFetches: 1},
		{name: "png said to be html", ctype: "text/html", body: small, served: true, wantFetches: 1},
		{name: "svg with a script", ctype: "image/svg+xml", body: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), wantFetches: 1},
		{name: "html", ctype: "image/png", body: []byte(`<!doctype html><script>alert(1)</script>`), wantFetches: 1},
		{name: "a large logo", ctype: "image/png", body: logo, served: true, wantFetches: 1},
		{name: "too large", ctype: "image/png", body: huge, wantFetches: 1},
		{name: "too many pixels", ctype: "image/png", body: pngOf(t, 5000, 1, false), wantFetches: 1},
		{name: "data URL", body: small, dataURL: true, served: true},
		{name: "private address", ctype: "image/png", body: small, private: true, wantFetches: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSite(t, siteOptions{allowPrivateIcons: !c.private})
			m := mintdirtest.NewFakeMint(t, map[string]any{"name": "Icon Mint"})
			icon := m.Serve("/icon", c.ctype, c.body)
			if c.dataURL {
				icon = "data:image/png;base64," + base64.StdEncoding.EncodeToString(c.body)
			}
			m.Set("icon_url", icon)
			id := s.addMint(m.URL)

			page := s.get("/mintdir/mint/"+id, browserAccept).body
			if !strings.Contains(page, `src="/mintdir/mint/`+id+`/icon"`) || strings.Contains(page, m.URL+"/icon") {
				t.Fatalf("the page does not load the icon through outpost:\n%s", page)
			}
			for range 2 { // the second answer comes from the cache
				r := s.get("/mintdir/mint/"+id+"/icon", "image/*")
				if r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") || r.header.Get("X-Content-Type-Options") != "nosniff" {
					t.Fatalf("icon: %d %v", r.status, r.header)
				}
				if c.served {
					if r.header.Get("Content-Type") != "image/png" || r.body != string(c.body) {
						t.Errorf("icon: got %s of %d bytes, want the PNG", r.header.Get("Content-Type"), len(r.body))
					}
				} else if r.header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(r.body, "<svg") || strings.Contains(r.body, "script") {
					t.Errorf("icon: got %s %q, want the placeholder", r.header.Get("Content-Type"), r.body)
				}
			}
			if got := m.Hits("/icon"); got != c.wantFetches {
				t.Errorf("the icon was fetched %d times, want %d", got, c.wantFetches)
			}
		})
	}
	t.Run("unknown mint", func(t *testing.T) {
		s := newSite(t, siteOptions{})
		if r := s.get("/mintdir/mint/00000000-0000-4000-8000-000000000000/icon", "image/*"); r.status != http.StatusNotFound {
			t.Errorf("icon of an unknown mint: %d", r.status)
		}
	})
}

func TestSubmitForm(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{submitPerHour: 3})
	m := mintdirtest.NewFakeMint(t, map[string]any{"name": "Form Mint"})

	r := s.submitForm(m.URL)
	if r.status != http.StatusSeeOther || !strings.HasSuffix(r.header.Get("Location"), "?submitted=queued") {
		t.Fatalf("submit: %d %v", r.status, r.header)
	}
	page := s.get(r.header.Get("Location"), browserAccept)
	checkPage(t, "mint page", page, http.StatusOK)
	if !strings.Contains(page.body, "The mint was added") {
		t.Error("the mint page does not say the mint was added")
	}
	if again := s.submitForm(m.URL + "/"); again.status != http.StatusSeeOther || !strings.HasSuffix(again.header.Get("Location"), "?submitted=exists") {
		t.Errorf("submitting again: %d %v", again.status, again.header)
	}

	bad := s.submitForm("ftp://mint.example")
	checkPage(t, "bad submit", bad, http.StatusBadRequest)
	for _, want := range []string{`role="alert"`, "mint_url:", `value="ftp://mint.example"`, `aria-invalid="true"`} {
		if !strings.Contains(bad.body, want) {
			t.Errorf("a refused submission's page lacks %q:\n%s", want, bad.body)
		}
	}

	// The API's own limit on submissions holds for the form too.
	limited := s.submitForm("https://another.example")
	checkPage(t, "over the limit", limited, http.StatusTooManyRequests)
	if limited.header.Get("Retry-After") == "" || !strings.Contains(limited.body, "too many requests") {
		t.Errorf("over the limit: %v\n%s", limited.header, limited.body)
	}
}

func TestErrorPages(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{rateLimit: 3})
	m := mintdirtest.NewFakeMint(t, map[string]any{"name": "Some Mint"})
	id := s.addMint(m.URL)

	missing := s.get("/mintdir/mint/00000000-0000-4000-8000-000000000000", browserAccept)
	checkPage(t, "unknown mint", missing, http.StatusNotFound)
	if !strings.Contains(missing.body, "no mint with that id or URL is known") {
		t.Errorf("unknown mint:\n%s", missing.body)
	}
	window := s.get("/mintdir/mint/"+id+"?window=1y", browserAccept)
	checkPage(t, "bad window", window, http.StatusBadRequest)
	if !strings.Contains(window.body, "window must be 24h, 7d or 30d") {
		t.Errorf("bad window:\n%s", window.body)
	}
	over := s.get("/mintdir/", browserAccept)
	checkPage(t, "over the rate limit", over, http.StatusTooManyRequests)
	if over.header.Get("Retry-After") == "" {
		t.Error("no Retry-After over the rate limit")
	}
	// Assets and icons are not counted.
	if r := s.get("/static/outpost.css", "text/css"); r.status != http.StatusOK || r.header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("stylesheet: %d %v", r.status, r.header)
	}
	if r := s.get("/mintdir/mint/"+id+"/icon", "image/*"); r.status != http.StatusOK || r.header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("icon over the page limit: %d %v", r.status, r.header)
	}
}

func TestIncidentShownAfterMintStops(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{})
	m := mintdirtest.NewFakeMint(t, map[string]any{"name": "Flaky Mint"})
	id := s.addMint(m.URL)
	m.Misbehave(mintdirtest.Fail(http.StatusServiceUnavailable))
	for range 3 {
		if err := s.dir.Probe(s.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	page := s.get("/mintdir/mint/"+id, browserAccept).body
	for _, want := range []string{`<span class="badge status-offline">offline</span>`, `<tr class="ongoing">`, "so far", `class="s-offline"`, "offline since"} {
		if !strings.Contains(page, want) {
			t.Errorf("offline mint's page lacks %q", want)
		}
	}
	m.Misbehave(nil)
	if err := s.dir.Probe(s.ctx, id); err != nil {
		t.Fatal(err)
	}
	page = s.get("/mintdir/mint/"+id, browserAccept).body
	if strings.Contains(page, `<tr class="ongoing">`) || !strings.Contains(page, `severity-minor`) {
		t.Errorf("the incident is not shown as over:\n%s", page)
	}
}

func TestQRCodes(t *testing.T) {
	t.Parallel()
	s := newSite(t, siteOptions{})
	r := s.do("POST", "/qr", "image/svg+xml", "text/plain", strings.NewReader("hello"))
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "image/svg+xml" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("qr: %d %v", r.status, r.header)
	}
	// "hello" is a version-1 code: 21 modules and a quiet zone of 4 a side.
	if !strings.Contains(r.body, `viewBox="0 0 29 29"`) || !strings.Contains(r.body, "<path") {
		t.Errorf("qr: %s", r.body)
	}
	token := "cashuB" + strings.Repeat("o2FteCJodHRwOi8vMTI3LjAuMC4xOjQ1MjcxYXVjc2F0YXSB", 20)
	if big := s.do("POST", "/qr", "", "text/plain", strings.NewReader(token)); big.status != http.StatusOK {
		t.Errorf("a token of %d bytes: %d %s", len(token), big.status, big.body)
	}
	if r := s.do("POST", "/qr", "", "text/plain", strings.NewReader(strings.Repeat("x", 3000))); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("too long: %d", r.status)
	}
	if r := s.do("POST", "/qr", "", "text/plain", strings.NewReader("  ")); r.status != http.StatusBadRequest {
		t.Errorf("empty: %d", r.status)
	}
}

func TestMountsMayNotTakeThePagesPaths(t *testing.T) {
	t.Parallel()
	for _, mount := range []string{"/static", "/qr", "/", "mintdir", "/mintdir/", "/static/x"} {
		_, err := web.New(web.Config{Mintdir: web.Service{Mount: mount, API: http.NotFoundHandler()}})
		if err == nil {
			t.Errorf("mount %q was accepted", mount)
		}
	}
	if _, err := web.New(web.Config{Mintdir: web.Service{Mount: "/mints", API: http.NotFoundHandler()}}); err != nil {
		t.Errorf("mount /mints: %v", err)
	}
}

// TestAuditsShown: a mint the audits tested shows them on its page: the
// summary, the strip and the row, and the trust part; without audits the
// section is left out.
func TestAuditsShown(t *testing.T) {
	network := &devmint.Network{}
	var ms []*devmint.Mint
	for _, name := range []string{"a", "b"} {
		node, _ := network.NewNode("")
		m, err := devmint.Start(devmint.Options{Dir: filepath.Join(t.TempDir(), name), Node: node, Name: "Audited " + name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(); node.Close() })
		ms = append(ms, m)
	}
	var aud *audit.Auditor
	s := newSite(t, siteOptions{auditor: func(st *store.Store) *audit.Auditor {
		a, err := audit.New(audit.Config{Settings: audit.DefaultSettings(), DB: st.DB, Log: quiet(), Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		aud = a
		return a
	}})
	id := s.addMint(ms[0].URL)
	if page := s.get("/mintdir/mint/"+id, browserAccept).body; strings.Contains(page, `id="audits-h"`) {
		t.Fatal("an unaudited mint shows audits")
	}
	for _, m := range ms {
		d, err := aud.DepositQuote(s.ctx, m.URL, 100)
		if err != nil {
			t.Fatal(err)
		}
		m.Node.PayInvoice(d.Invoice)
		for d.State != audit.DepositDone && s.ctx.Err() == nil {
			d, _ = aud.Deposit(s.ctx, d.ID)
		}
	}
	if r, err := aud.Audit(s.ctx, ms[1].URL, ms[0].URL, 10); err != nil || r.Outcome != audit.OutcomeOK {
		t.Fatalf("round: %+v %v", r, err)
	}
	if err := s.dir.Probe(s.ctx, id); err != nil { // the summary, with the audits
		t.Fatal(err)
	}
	page := s.get("/mintdir/mint/"+id, browserAccept).body
	checkNoInlineCode(t, "mint page", page)
	for _, want := range []string{`id="audits-h"`, "1 in the last 30 days, 100% of them paid", "holds 110 sats here", `aria-labelledby="au-t au-d"`, `class="s-online"`, "<td data-label=\"Role\">payee</td>", `<th scope="row">Audits</th>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the audited mint's page lacks %q", want)
		}
	}
}
