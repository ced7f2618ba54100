package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/web"
)

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// get fetches url with the given Accept, without following redirects.
func fetchPage(t *testing.T, method, url, accept string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, nil)
	req.Header.Set("Accept", accept)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestPages runs the whole program and looks at it as a browser: every page
// is HTML under the CSP, and no documented API path answers with a page.
func TestPages(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "500ms"})
	_, cfg := call(t, "GET", inst.url+"/faucet/config", nil)
	// The directory lists the embedded mint at start: it may be there already.
	code, sub := call(t, "POST", inst.url+"/mintdir/mints/submit", map[string]any{"mint_url": cfg["mint_url"]})
	if code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("submit the embedded mint: %d %v", code, sub)
	}
	id := sub["mint_id"].(string)
	testkit.WaitFor(t, 15*time.Second, "the embedded mint online", func() bool {
		_, st := call(t, "GET", inst.url+"/mintdir/mints/"+id+"/status", nil)
		return st["status"] == "online"
	})

	t.Run("every page", func(t *testing.T) {
		for path, want := range map[string]string{
			"/":                                   "Nostr relay",
			"/faucet/":                            "Test-sats faucet",
			"/mintdir/":                           "outpost test mint",
			"/mintdir/mint/" + id:                 "Last checked",
			"/banlist/":                           "Public ban list",
			"/mintdir/mint/" + id + "?window=30d": "Response time since the first check", // a new mint
		} {
			code, h, body := fetchPage(t, "GET", inst.url+path, browserAccept)
			if code != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" || h.Get("Content-Security-Policy") != web.CSP {
				t.Errorf("%s: %d %v", path, code, h)
			}
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", path, want)
			}
			if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, "<style") {
				t.Errorf("%s has inline code", path)
			}
		}
		// The faucet page carries what its script needs to sign NIP-98
		// events for this server's public URL.
		_, _, body := fetchPage(t, "GET", inst.url+"/faucet/", browserAccept)
		if !strings.Contains(body, `data-public-url="`+inst.url+`"`) || !strings.Contains(body, `data-mount="/faucet"`) {
			t.Errorf("the faucet page lacks its data attributes")
		}
	})

	t.Run("no API path answers with a page", func(t *testing.T) {
		params := strings.NewReplacer("{mint_id}", id, "{pubkey}", strings.Repeat("ab", 32), "{word}", "nothing", "{key}", "nothing")
		for _, mount := range []string{"/banlist", "/faucet", "/mintdir"} {
			var doc struct {
				Paths map[string]map[string]json.RawMessage `json:"paths"`
			}
			_, _, body := fetchPage(t, "GET", inst.url+mount+"/openapi.json", "application/json")
			if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc.Paths) == 0 {
				t.Fatalf("%s/openapi.json: %v", mount, err)
			}
			var paths []string
			for p := range doc.Paths {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				for method := range doc.Paths[p] {
					method = strings.ToUpper(method)
					if method == "PARAMETERS" {
						continue
					}
					url := inst.url + mount + params.Replace(p)
					bcode, bh, bbody := fetchPage(t, method, url, browserAccept)
					acode, ah, _ := fetchPage(t, method, url, "application/json")
					if !strings.HasPrefix(bh.Get("Content-Type"), "application/json") || bh.Get("Content-Security-Policy") != "" ||
						bcode != acode || bh.Get("Content-Type") != ah.Get("Content-Type") {
						t.Errorf("%s %s as a browser: %d %s %.80s; as a program: %d %s", method, mount+p, bcode, bh.Get("Content-Type"), bbody, acode, ah.Get("Content-Type"))
					}
				}
			}
		}
	})

	t.Run("the relay root", func(t *testing.T) {
		code, h, body := fetchPage(t, "GET", inst.url+"/", "application/nostr+json")
		if code != 200 || h.Get("Content-Type") != "application/nostr+json" || !strings.Contains(body, "supported_nips") {
			t.Errorf("NIP-11: %d %v %s", code, h, body)
		}
		code, h, body = fetchPage(t, "GET", inst.url+"/", "")
		if code != 200 || h.Get("Content-Type") != "application/json" || !strings.Contains(body, `"services"`) {
			t.Errorf("plain GET /: %d %v %s", code, h, body)
		}
	})
}
