package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The REST contract at the edges, against the whole program: what the
// services answer to HEAD, to a method a path does not have, to escaped
// path values, trailing JSON, odd mint URLs, malformed escapes and headers
// too large.
func TestHTTPEdges(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_PROBE_ALLOW_PRIVATE": "true"})
	send := func(method, path, body string, headers ...string) (*http.Response, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, inst.url+path, strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	auth := admin()
	if resp, body := send("POST", "/banlist/admin/words", `{"word":"fz/slash1"}`, auth...); resp.StatusCode != 201 {
		t.Fatalf("add a word: %d %s", resp.StatusCode, body)
	}
	for _, tt := range []struct {
		method, path, body string
		status             int
		want               string // in the body, or the Allow header for a 405
	}{
		{"HEAD", "/banlist/blocked/words", "", 200, ""},
		{"HEAD", "/mintdir/health", "", 200, ""},
		{"HEAD", "/faucet/config", "", 200, ""},
		{"HEAD", "/health", "", 200, ""},
		{"PUT", "/banlist/blocked/words", "", 405, "GET, HEAD"},
		{"GET", "/faucet/auth/login", "", 405, "POST"},
		{"DELETE", "/faucet/claim/quote", "", 405, "POST"},
		{"DELETE", "/banlist/admin/words/fz%2Fslash1", "", 200, `"fz/slash1"`},
		{"POST", "/banlist/admin/words", `{"word":"x1"}]`, 400, `"invalid_json"`},
		{"POST", "/mintdir/mints/submit", `{"mint_url":"http://[fe80::1%25eth0]/"}`, 400, `"invalid_mint_url"`},
		{"POST", "/mintdir/mints/submit", `{"mint_url":"http://[::1%25lo]:9"}`, 400, `"invalid_mint_url"`},
		{"POST", "/mintdir/mints/submit", `{"mint_url":"http://127.0.0.1:99999"}`, 400, `"invalid_mint_url"`},
		{"GET", "/banlist/blocked/words?x=%zz", "", 400, `"invalid_query"`},
		{"GET", "/banlist/" + strings.Repeat("x", 5000), "", 404, `"not_found"`},
	} {
		resp, body := send(tt.method, tt.path, tt.body, auth...)
		switch {
		case resp.StatusCode != tt.status:
			t.Errorf("%s %.60s: %d %.200s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.status)
		case tt.status == 405 && (resp.Header.Get("Allow") != tt.want || !strings.Contains(body, `"method_not_allowed"`)):
			t.Errorf("%s %s: Allow %q %s, want %q and the JSON error", tt.method, tt.path, resp.Header.Get("Allow"), body, tt.want)
		case tt.method == "HEAD" && (body != "" || resp.Header.Get("Content-Length") == ""):
			t.Errorf("HEAD %s: body %q, Content-Length %q", tt.path, body, resp.Header.Get("Content-Length"))
		case tt.status != 405 && !strings.Contains(body, tt.want):
			t.Errorf("%s %.60s: %.200s, want %s", tt.method, tt.path, body, tt.want)
		case len(body) > 500:
			t.Errorf("%s %.60s: a %d-byte answer echoes the request", tt.method, tt.path, len(body))
		}
	}

	// Before any handler: net/http's plain-text answers, as docs/configuration.md says.
	if resp, _ := send("GET", "/banlist/blocked/words", "", "X-Padding", strings.Repeat("p", 80<<10)); resp.StatusCode != 431 {
		t.Errorf("an 80 KiB header: %d, want 431", resp.StatusCode)
	}
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(inst.url, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(conn, "GET /banlist/blocked/pubkeys/%zz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 400 {
		t.Errorf("a malformed path escape: %v %v", resp, err)
	}
}
