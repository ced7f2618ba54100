package probe

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit/netguardtest"
)

const goodInfo = `{"name":"Test","pubkey":"02aa","version":"x/1","nuts":{"4":{"methods":[],"disabled":false}}}`

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestInfoFailureModes(t *testing.T) {
	loop := 0
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		wantOK   bool
		wantKind string
		skipped  bool
		status   int
	}{
		{"ok", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/info" || !strings.HasPrefix(r.UserAgent(), "outpost-mintdir/") {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, goodInfo)
		}, true, "", false, 200},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }, false, KindHTTPStatus, false, 500},
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, false, KindHTTPStatus, false, 404},
		{"429 is not downtime", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "slow down", http.StatusTooManyRequests) }, false, KindRateLimited, true, http.StatusTooManyRequests},
		{"HTML", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!doctype html><html><body>hello</body></html>")
		}, false, KindHTML, false, 200},
		{"invalid JSON", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"name": "Test", "nuts": {`) }, false, KindInvalidJSON, false, 200},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte{0, 1, 2, 0xff, 'x'}) }, false, KindInvalidJSON, false, 200},
		{"empty", func(w http.ResponseWriter, r *http.Request) {}, false, KindInvalidJSON, false, 200},
		{"JSON but not info", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"hello":"world"}`) }, false, KindInvalidInfo, false, 200},
		{"JSON array", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `[1,2,3]`) }, false, KindInvalidInfo, false, 200},
		{"10 MB with length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(10<<20))
			w.Write([]byte(`{"name":"`))
			w.Write(make([]byte, 10<<20-9))
		}, false, KindTooLarge, false, 200},
		{"10 MB chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"name":"`))
			chunk := []byte(strings.Repeat("a", 64<<10))
			for range 160 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}, false, KindTooLarge, false, 200},
		{"slow headers", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}, false, KindTimeout, false, 0},
		{"slow-loris body", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"name":`))
			w.(http.Flusher).Flush()
			for range 100 {
				select {
				case <-time.After(50 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
				w.Write([]byte(" "))
				w.(http.Flusher).Flush()
			}
		}, false, KindTimeout, false, 200},
		{"redirect loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/v1/info", http.StatusFound) }, false, KindRedirectLoop, false, 0},
		{"redirect ping-pong", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/info" {
				http.Redirect(w, r, "/other", http.StatusFound)
			} else {
				http.Redirect(w, r, "/v1/info", http.StatusFound)
			}
		}, false, KindRedirectLoop, false, 0},
		{"too many redirects", func(w http.ResponseWriter, r *http.Request) {
			loop++
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", loop), http.StatusFound)
		}, false, KindTooManyRedirects, false, 0},
		{"one redirect is followed", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/info" {
				http.Redirect(w, r, "/real/v1/info", http.StatusMovedPermanently)
				return
			}
			fmt.Fprint(w, goodInfo)
		}, true, "", false, 200},
	}
	c := NewClient(ClientOptions{AllowPrivate: true, Timeout: 400 * time.Millisecond})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := serve(t, tt.handler)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			res := c.Info(ctx, base, time.Now)
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v: the timeout did not hold", time.Since(start))
			}
			if res.OK != tt.wantOK || res.ErrKind != tt.wantKind || res.Skipped != tt.skipped || res.HTTPStatus != tt.status {
				t.Fatalf("got ok=%v kind=%q skipped=%v status=%d (%s), want ok=%v kind=%q skipped=%v status=%d",
					res.OK, res.ErrKind, res.Skipped, res.HTTPStatus, res.Err, tt.wantOK, tt.wantKind, tt.skipped, tt.status)
			}
			if tt.wantOK && (res.RTT <= 0 || string(res.Body) != goodInfo) {
				t.Fatalf("ok result: rtt %v body %q", res.RTT, res.Body)
			}
			if !tt.wantOK && res.Body != nil {
				t.Fatalf("a failed check kept a body")
			}
		})
	}
}

func TestInfoNetworkErrors(t *testing.T) {
	t.Parallel()
	// None of these cases waits for the timeout; a generous one keeps a TLS
	// handshake under -race on a loaded machine from being called a timeout.
	c := NewClient(ClientOptions{AllowPrivate: true, Timeout: 10 * time.Second})
	ctx := context.Background()

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if res := c.Info(ctx, "http://"+addr, time.Now); res.ErrKind != KindRefused || res.RTT != 0 {
		t.Errorf("closed port: %q (%s), rtt %v", res.ErrKind, res.Err, res.RTT)
	}

	// A server that hangs up without answering.
	ln, _ = net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if res := c.Info(ctx, "http://"+ln.Addr().String(), time.Now); res.ErrKind != KindConnection {
		t.Errorf("hang-up: %q (%s)", res.ErrKind, res.Err)
	}

	if res := c.Info(ctx, "http://no-such-mint.invalid", time.Now); res.ErrKind != KindDNS {
		t.Errorf("unknown host: %q (%s)", res.ErrKind, res.Err)
	}

	// TLS against a plain-HTTP server.
	base := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, goodInfo) })
	if res := c.Info(ctx, strings.Replace(base, "http://", "https://", 1), time.Now); res.ErrKind != KindTLS {
		t.Errorf("TLS to plain HTTP: %q (%s)", res.ErrKind, res.Err)
	}
	self := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, goodInfo) }))
	self.Config.ErrorLog = log.New(io.Discard, "", 0)
	self.StartTLS()
	defer self.Close()
	if res := c.Info(ctx, self.URL, time.Now); res.ErrKind != KindTLS {
		t.Errorf("self-signed certificate: %q (%s)", res.ErrKind, res.Err)
	}
}

func TestDialGuardRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	hits := 0
	base := serve(t, func(w http.ResponseWriter, r *http.Request) { hits++; fmt.Fprint(w, goodInfo) })
	guarded := NewClient(ClientOptions{Timeout: time.Second})
	for _, u := range []string{base, strings.Replace(base, "127.0.0.1", "localhost", 1)} {
		res := guarded.Info(context.Background(), u, time.Now)
		if res.OK || res.ErrKind != KindBlocked {
			t.Errorf("%s: ok=%v kind=%q, want blocked_address", u, res.OK, res.ErrKind)
		}
	}
	if _, err := guarded.Keysets(context.Background(), base); err == nil {
		t.Error("keysets from a loopback mint were fetched by a guarded client")
	}
	if hits != 0 {
		t.Fatalf("the guarded client reached the loopback server %d times", hits)
	}
	// Every range the Lightning-address client refuses too, refused before
	// a connection is attempted.
	for _, ip := range netguardtest.Blocked {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		res := guarded.Info(ctx, "https://"+netguardtest.URLHost(ip), time.Now)
		cancel()
		if res.OK || res.ErrKind != KindBlocked {
			t.Errorf("%s: ok=%v kind=%q (%s), want blocked_address", ip, res.OK, res.ErrKind, res.Err)
		}
	}
	// A public host redirecting to a private one is refused at dial time
	// too; here the redirect target is what the guard sees.
	if res := NewClient(ClientOptions{AllowPrivate: true}).Info(context.Background(), base, time.Now); !res.OK {
		t.Fatalf("allowed client: %q", res.ErrKind)
	}
}

func TestKeysets(t *testing.T) {
	t.Parallel()
	base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/keysets" {
			fmt.Fprint(w, `{"keysets":[{"id":"00ab","unit":"sat","active":true,"input_fee_ppk":100}]}`)
			return
		}
		fmt.Fprint(w, "not json")
	})
	c := NewClient(ClientOptions{AllowPrivate: true})
	b, err := c.Keysets(context.Background(), base)
	if err != nil || !strings.Contains(string(b), `"unit":"sat"`) {
		t.Fatalf("keysets: %s %v", b, err)
	}
	if _, err := c.Keysets(context.Background(), base+"/nope"); err == nil {
		t.Fatal("invalid keysets accepted")
	}
}
