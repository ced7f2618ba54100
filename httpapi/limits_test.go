package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

// limitsServer serves a real relay and one service through NewServer with
// limits short enough for a test, as cmd/outpost does with the defaults.
func limitsServer(t *testing.T, lim httpapi.ServerLimits) *httptest.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(t, storetest.Options{Log: log})
	srv := httptest.NewUnstartedServer(nil)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: log, PublicURL: "http://" + srv.Listener.Addr().String(), ServicePub: pk})
	routes := chi.NewRouter()
	routes.Post("/echo", httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		v, err := httpapi.Decode[map[string]any](w, r)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, v)
	}))
	routes.Get("/ignores-body", httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return httpapi.Encode(w, http.StatusOK, map[string]bool{"ok": true})
	}))
	h := httpapi.New(httpapi.Config{Relay: rl, Log: log, Services: []httpapi.Service{{Name: "svc", Mount: "/svc", Routes: routes}}})
	srv.Config = httpapi.NewServer(h, lim)
	relaytest.Serve(t, srv, rl, nil)
	return srv
}

// A request whose declared body never arrives is answered (408 where a
// handler reads it) and its connection closed once the body timeout has
// passed, whoever the request was for: a service that reads its body, one
// that ignores it, or the relay's NIP-86.
func TestStalledBodiesAreClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := limitsServer(t, httpapi.ServerLimits{BodyTimeout: timeout})
	requests := []string{
		"POST /svc/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":",
		"GET /svc/ignores-body HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
		"POST /svc/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"a\":",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/nostr+json+rpc\r\nContent-Length: 100\r\n\r\n",
	}
	const perKind = 50
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, perKind*len(requests))
	start := time.Now()
	for i := range perKind * len(requests) {
		req := requests[i%len(requests)]
		wg.Go(func() {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			deadline, _ := ctx.Deadline()
			conn.SetDeadline(deadline)
			if _, err := io.WriteString(conn, req); err != nil {
				errs <- err
				return
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				errs <- fmt.Errorf("%.40q: no answer: %v", req, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			if strings.Contains(req, "/svc/echo") && resp.StatusCode != http.StatusRequestTimeout {
				errs <- fmt.Errorf("%.40q: %d, want 408", req, resp.StatusCode)
			}
			// The server must close the connection, not wait for the body.
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !isReset(err) {
				errs <- fmt.Errorf("%.40q: connection still open: %v", req, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d stalled requests closed in %v (body timeout %v)", perKind*len(requests), time.Since(start).Round(time.Millisecond), timeout)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// A body that arrives in time is read whatever the timeout, and a slow one
// that is complete before it is not cut.
func TestBodyInTime(t *testing.T) {
	t.Parallel()
	// A body in three parts 100 ms apart, well inside a 1 s timeout.
	const timeout = time.Second
	srv := limitsServer(t, httpapi.ServerLimits{BodyTimeout: timeout})
	pr, pw := io.Pipe()
	go func() {
		for _, part := range []string{`{"a"`, `:1,`, `"b":2}`} {
			time.Sleep(100 * time.Millisecond) // a slow client: net/http's deadlines are on the wall clock
			pw.Write([]byte(part))
		}
		pw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/svc/echo", pr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"b":2`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// Once read, the body's deadline is lifted: the kept-alive connection
	// serves the next request after the timeout has passed.
	time.Sleep(timeout + timeout/4) // past the body timeout, on the wall clock net/http keeps
	req, _ = http.NewRequestWithContext(ctx, "POST", srv.URL+"/svc/echo", strings.NewReader(`{"c":3}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the next request: %d", resp.StatusCode)
	}
}

// Request headers are capped at 64 KiB (and net/http's slack): net/http
// answers 431 beyond.
func TestHeaderCap(t *testing.T) {
	t.Parallel()
	srv := limitsServer(t, httpapi.ServerLimits{})
	for _, tt := range []struct {
		size   int
		status int
	}{
		{32 << 10, 200},
		// net/http reads up to 4 KiB past the cap, and on a kept-alive
		// connection another 4 KiB it had buffered while waiting.
		{httpapi.MaxHeaderBytes + 16<<10, 431},
		{1 << 20, 431},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/svc/ignores-body", nil)
		req.Header.Set("X-Padding", strings.Repeat("p", tt.size))
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("%d bytes: %v", tt.size, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("a %d-byte header: %d, want %d", tt.size, resp.StatusCode, tt.status)
		}
	}
}

// A websocket connection lives on past every limit of the server (it is
// hijacked, and the upgrade clears the connection's deadlines): a client
// publishes and reads long after the header, body and idle timeouts.
func TestWebsocketOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	const short = 200 * time.Millisecond
	srv := limitsServer(t, httpapi.ServerLimits{ReadHeaderTimeout: short, BodyTimeout: short, IdleTimeout: short})
	c, _ := relaytest.Dial(t, srv.URL)
	sk := nostr.GeneratePrivateKey()
	for i := range 3 {
		time.Sleep(2 * short) // past every server timeout (twice over), on the wall clock net/http keeps
		ev := relaytest.Sign(t, sk, 1, fmt.Sprint("still here ", i))
		if err := relaytest.Publish(t, c, ev); err != nil {
			t.Fatalf("publish %d after %v: %v", i, time.Duration(i+1)*2*short, err)
		}
	}
	pub, _ := nostr.GetPublicKey(sk)
	if got := relaytest.Query(t, c, nostr.Filter{Authors: []string{pub}}); len(got) != 3 {
		t.Fatalf("%d events read back, want 3", len(got))
	}
}
