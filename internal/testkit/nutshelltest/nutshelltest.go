// Package nutshelltest runs a real Nutshell mint (the reference Cashu mint,
// with its FakeWallet Lightning backend) for Go tests: the bundle in
// ../shared/tools/nutshell next to the repository (see its README). Each mint
// listens on a free 127.0.0.1 port with its data in a directory of the test's,
// and is stopped with SIGTERM when the test ends. Where the bundle is absent,
// tests that need it are skipped with a message that says so.
package nutshelltest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
	_ "modernc.org/sqlite" // to rotate keysets in a stopped mint's database
)

// ErrNotInstalled is returned by Start when the Nutshell bundle is missing.
var ErrNotInstalled = errors.New("nutshelltest: the Nutshell bundle was not found")

// ErrShort is returned by Start under go test -short, and is also
// ErrNotInstalled (so a test skips as where the bundle is missing): a
// Nutshell mint takes seconds to start and its tests tens of seconds, so the
// quick loop leaves it to the full suite.
var ErrShort error = shortError{}

type shortError struct{}

func (shortError) Error() string {
	return "nutshelltest: not started under -short (the gonuts mint runs the same flows; go test without -short runs Nutshell)"
}

func (shortError) Is(target error) bool { return target == ErrNotInstalled }

// Options configure a mint. The zero value is Nutshell's defaults as run-mint
// sets them: one v2 keyset, input fee 100 ppk, invoices paid after 1 s.
type Options struct {
	Dir  string   // data directory; required by Start, a temp dir for StartT
	Port int      // 0: a free port (pass a stopped mint's Port to restart it at its URL)
	Name string   // MINT_INFO_NAME
	Env  []string // KEY=VALUE settings, e.g. FAKEWALLET_PAY_INVOICE_STATE=PENDING
}

// Mint is a running Nutshell mint.
type Mint struct {
	URL  string // http://127.0.0.1:port
	Port int
	Dir  string

	cmd  *exec.Cmd
	logs *logBuffer
	done chan struct{}
	stop sync.Once
}

// RunMint is the path of the bundle's run-mint script, found relative to the
// module root (../shared/tools/nutshell) or in $OUTPOST_NUTSHELL_DIR.
func RunMint() (string, error) {
	dir := os.Getenv("OUTPOST_NUTSHELL_DIR")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "..", "shared", "tools", "nutshell")
	}
	p := filepath.Join(dir, "run-mint")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w at %s (set OUTPOST_NUTSHELL_DIR to its directory)", ErrNotInstalled, p)
	}
	return p, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("nutshelltest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartT starts a mint for t, or skips t when the bundle is missing.
func StartT(t testing.TB, opt Options) *Mint {
	t.Helper()
	if opt.Dir == "" {
		opt.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := Start(ctx, opt)
	if errors.Is(err, ErrNotInstalled) {
		testkit.Missing(t, "the Nutshell mint", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Stop()
		if t.Failed() {
			t.Logf("nutshell mint %s logs (tail):\n%s", m.URL, m.Logs(4000))
		}
	})
	return m
}

// Start runs run-mint and waits (within ctx) until the mint answers
// GET /v1/info. Stop it with Stop.
func Start(ctx context.Context, opt Options) (*Mint, error) {
	if flag.Parsed() && testing.Short() {
		return nil, ErrShort
	}
	script, err := RunMint()
	if err != nil {
		return nil, err
	}
	if opt.Dir == "" {
		return nil, errors.New("nutshelltest: Options.Dir is required")
	}
	if opt.Port != 0 {
		return start(ctx, script, opt, opt.Port)
	}
	// A free port found here may be taken by another test's server before
	// the mint binds it: then the mint exits, and another port is tried.
	for try := 1; ; try++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		m, err := start(ctx, script, opt, port)
		if err == nil || try == 3 || !strings.Contains(err.Error(), "address already in use") {
			return m, err
		}
	}
}

// start runs run-mint on port and waits until it answers.
func start(ctx context.Context, script string, opt Options, port int) (*Mint, error) {
	name := opt.Name
	if name == "" {
		name = "Nutshell test mint"
	}
	m := &Mint{URL: "http://127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: opt.Dir, logs: &logBuffer{}, done: make(chan struct{})}
	m.cmd = exec.Command(script, strconv.Itoa(port), opt.Dir, name)
	m.cmd.Env = append(os.Environ(), opt.Env...)
	m.cmd.Stdout, m.cmd.Stderr = m.logs, m.logs
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("nutshelltest: start %s: %w", script, err)
	}
	go func() { m.cmd.Wait(); close(m.done) }()
	if err := m.waitReady(ctx); err != nil {
		m.Stop()
		return nil, fmt.Errorf("nutshelltest: mint on port %d: %w\n%s", port, err, m.Logs(4000))
	}
	return m, nil
}

func (m *Mint) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+"/v1/info", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-m.done:
			return errors.New("run-mint exited")
		case <-ctx.Done():
			return fmt.Errorf("no answer from /v1/info: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM and waits for the mint to exit (SIGKILL after 15 s).
// It may be called more than once.
func (m *Mint) Stop() {
	m.stop.Do(func() {
		if m.cmd.Process == nil {
			return
		}
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(15 * time.Second):
			m.cmd.Process.Kill()
			<-m.done
		}
	})
}

// Logs returns the last n bytes of the mint's output.
func (m *Mint) Logs(n int) string {
	s := m.logs.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// SetKeysetActive changes a keyset's active flag in a stopped mint's
// database, as an operator retiring a keyset would; the mint reads it when
// it starts again.
func SetKeysetActive(dir, id string, active bool) error {
	db, err := sql.Open("sqlite", filepath.Join(dir, "db", "mint.sqlite3"))
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE keysets SET active = ? WHERE id = ?`, active, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("nutshelltest: keyset %s not found", id)
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// Pair is the two Nutshell mints that the wallet's, the faucet's and the
// whole program's tests share: Settle, whose FakeWallet pays its own
// invoices by itself after a delay (long enough for a test to pay them
// first), and Pending, whose Lightning payments stay pending until asked
// about.
type Pair struct{ Settle, Pending *Mint }

// StartPair starts both mints at once in directories under dir. An error
// (ErrNotInstalled where the bundle is absent) says what did not start;
// Stop stops what did.
func StartPair(dir string) (Pair, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var p Pair
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() {
		p.Settle, errA = Start(ctx, Options{Dir: filepath.Join(dir, "a"), Env: []string{"FAKEWALLET_DELAY_INCOMING_PAYMENT=3"}})
	})
	wg.Go(func() {
		p.Pending, errB = Start(ctx, Options{Dir: filepath.Join(dir, "p"), Name: "pending mint", Env: []string{"FAKEWALLET_PAY_INVOICE_STATE=PENDING"}})
	})
	wg.Wait()
	return p, errors.Join(errA, errB)
}

// Stop stops the mints that started.
func (p Pair) Stop() {
	for _, m := range []*Mint{p.Settle, p.Pending} {
		if m != nil {
			m.Stop()
		}
	}
}
