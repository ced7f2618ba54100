package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// The whole-program tests run outpost two ways: through run() in the test
// process (start, an instance), and as a child process of its own binary
// (startChild, a child), which a test can kill with SIGKILL. Both are told
// apart only by how they are started and stopped; they are waited for and
// called alike.

const testAdminKey = "test-admin-key-0123456789abcdef"

// testSettings are the settings every test instance runs with, plus extra.
func testSettings(dir string, extra map[string]string) map[string]string {
	env := map[string]string{
		"OUTPOST_ADDR": "127.0.0.1:0", "OUTPOST_DATA_DIR": dir, "OUTPOST_ADMIN_API_KEY": testAdminKey,
		"OUTPOST_LOG_LEVEL": "debug", "OUTPOST_RATE_LIMIT": "0",
		"OUTPOST_MEMORY_LIMIT": "0", // the limit is process-wide: not for the test binary
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// testEnv is testSettings as run's getenv.
func testEnv(dir string, extra map[string]string) func(string) string {
	env := testSettings(dir, extra)
	return func(k string) string { return env[k] }
}

// servingURL reads outpost's stdout until its first line, "outpost
// <version> serving on http://127.0.0.1:port (relay ws://...)", and
// returns the address; it keeps draining stdout afterwards, so the writer
// never blocks. It fails when stdout ends first (outpost exited) or after
// timeout.
func servingURL(stdout io.Reader, timeout time.Duration) (string, error) {
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if f := strings.Fields(line); ok && len(f) > 4 {
			return f[4], nil
		}
		return "", fmt.Errorf("outpost exited before it served (first line %q)", line)
	case <-time.After(timeout):
		return "", fmt.Errorf("outpost did not start in %s", timeout)
	}
}

// waitHealthy waits until url's /health answers 200.
func waitHealthy(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	testkit.WaitFor(t, timeout, "health", func() bool {
		resp, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// instance is a running outpost started through run().
type instance struct {
	url     string // http://127.0.0.1:port
	ws      string
	dir     string
	stop    context.CancelFunc
	done    chan error
	logs    *testkit.LogBuffer
	proxies []*relaytest.Proxy
}

// start runs outpost on a free port and waits until /health answers.
func start(t *testing.T, dir string, extra map[string]string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	inst := &instance{dir: dir, stop: cancel, done: make(chan error, 1), logs: &testkit.LogBuffer{}}
	go func() {
		err := run(ctx, nil, testEnv(dir, extra), strings.NewReader(""), pw, inst.logs)
		pw.Close()
		inst.done <- err
	}()
	url, err := servingURL(pr, 30*time.Second)
	if err != nil {
		select {
		case runErr := <-inst.done:
			err = fmt.Errorf("%v: %v", err, runErr)
		default:
		}
		t.Fatalf("%v\n%s", err, inst.logs)
	}
	inst.url, inst.ws = url, "ws"+strings.TrimPrefix(url, "http")
	t.Cleanup(func() {
		inst.shutdown(t)
		if t.Failed() {
			t.Logf("outpost logs:\n%s", inst.logs)
		}
	})
	waitHealthy(t, inst.url, 10*time.Second)
	return inst
}

func (inst *instance) shutdown(t *testing.T) {
	t.Helper()
	for _, p := range inst.proxies {
		p.Freeze()
	}
	inst.stop()
	select {
	case err, ok := <-inst.done:
		if !ok {
			return // shut down already (a test that restarts an instance)
		}
		if err != nil {
			t.Errorf("run returned %v", err)
		}
		close(inst.done)
	case <-time.After(45 * time.Second): // its store alone may take 15 s to close (kv's closeWait); under -race and load, more before it
		t.Fatal("outpost did not shut down")
	}
}

// asMain is set in the environment of a child started from this test
// binary: the child is then outpost itself (see init), so the tests that
// run outpost as a process of its own need no second binary built and
// linked. The child runs the same non-test code as a built outpost.
const asMain = "OUTPOST_TEST_AS_MAIN"

func init() {
	if os.Getenv(asMain) == "1" {
		main() // exits
	}
}

// The outpost "binary" for the tests that run it as a child process (to
// kill it with SIGKILL, or as strfry's plugin): a script that execs this
// test binary as outpost, so the child keeps the script's process id.
var binary struct {
	once sync.Once
	path string
	err  error
}

func outpostBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			binary.err = err
			return
		}
		dir, err := os.MkdirTemp("", "outpost-bin")
		if err != nil {
			binary.err = err
			return
		}
		binary.path = filepath.Join(dir, "outpost")
		script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", asMain, self)
		binary.err = os.WriteFile(binary.path, []byte(script), 0o700)
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// child is outpost running in a process of its own.
type child struct {
	cmd  *exec.Cmd
	url  string
	logs *testkit.LogBuffer
	done chan struct{}
}

// startChild runs the outpost binary with the settings start would use and
// waits until /health answers.
func startChild(t *testing.T, dir string, extra map[string]string) *child {
	t.Helper()
	c, out := launchChild(t, dir, extra)
	var err error
	if c.url, err = servingURL(out, 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, c.logs)
	}
	waitHealthy(t, c.url, 30*time.Second)
	return c
}

// launchChild starts the outpost binary with the settings start would use
// and returns at once, with its stdout (see servingURL).
func launchChild(t *testing.T, dir string, extra map[string]string) (*child, io.Reader) {
	t.Helper()
	c := &child{cmd: exec.Command(outpostBinary(t)), logs: &testkit.LogBuffer{}, done: make(chan struct{})}
	c.cmd.Env = os.Environ()
	for k, v := range testSettings(dir, extra) {
		c.cmd.Env = append(c.cmd.Env, k+"="+v)
	}
	c.cmd.Stderr = c.logs
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("outpost (pid %d) logs, tail:\n%s", c.cmd.Process.Pid, tail(c.logs.String(), 6000))
		}
	})
	return c, out
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// kill sends SIGKILL: no shutdown, no flush, nothing.
func (c *child) kill() {
	c.cmd.Process.Kill()
	<-c.done
}

// stop sends SIGTERM and waits for a clean exit.
func (c *child) stop(t *testing.T) {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("outpost did not stop on SIGTERM")
	}
}

// call makes a request with a JSON body (nil: none) and headers given as
// name, value pairs, and decodes a JSON answer (nil when it is not JSON);
// a request that gets no answer fails the test.
func call(t *testing.T, method, url string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	code, m, err := tryCall(method, url, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return code, m
}

// tryCall is call that returns an error where the request got no whole
// answer (the process may be gone).
func tryCall(method, url string, body any, headers ...string) (int, map[string]any, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m, nil
}

// nip86 calls a NIP-86 method of the relay at url, signed (NIP-98) by
// signer, as call does.
func nip86(t *testing.T, url, signer, method string, params ...any) (int, map[string]any) {
	t.Helper()
	body := map[string]any{"method": method, "params": params}
	b, _ := json.Marshal(body) // as call marshals it: the payload signed
	auth, _ := nip98.Sign(signer, "POST", url, b, time.Now())
	return call(t, "POST", url+"/", body, "Content-Type", "application/nostr+json+rpc", "Authorization", auth)
}

func admin() []string { return []string{"Authorization", "Bearer " + testAdminKey} }

// connect opens a go-nostr client to the instance (see relaytest for why
// through a proxy that the instance freezes before it shuts down).
func connect(t *testing.T, inst *instance) *nostr.Relay {
	t.Helper()
	r, p := relaytest.Dial(t, inst.url)
	inst.proxies = append(inst.proxies, p)
	return r
}

func query(t *testing.T, r *nostr.Relay, f nostr.Filter) []*nostr.Event {
	t.Helper()
	return relaytest.Query(t, r, f)
}

func note(t *testing.T, sk, content string, kind int, tags ...nostr.Tag) nostr.Event {
	return relaytest.Sign(t, sk, kind, content, tags...)
}

func publish(t *testing.T, r *nostr.Relay, ev nostr.Event) error { return relaytest.Publish(t, r, ev) }

func wantBlocked(t *testing.T, err error, contains string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "blocked:") || !strings.Contains(err.Error(), contains) {
		t.Fatalf("publish: %v, want a blocked: rejection mentioning %q", err, contains)
	}
}
