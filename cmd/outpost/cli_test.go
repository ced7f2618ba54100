package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// cli runs outpost's command line with env and returns what it printed. It
// never serves for long: a command that starts the server by mistake is cut
// short by the context and shows up in the output.
func cli(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	e := map[string]string{"OUTPOST_ADDR": "127.0.0.1:0", "OUTPOST_DATA_DIR": filepath.Join(t.TempDir(), "default-data")}
	for k, v := range env {
		e[k] = v
	}
	err = run(ctx, args, func(k string) string { return e[k] }, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

// newDataDir makes a data dir holding an (empty) outpost database.
func newDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestHelpGoesToStdout(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"serve", "--help"}, {"serve", "-h"},
		{"apikey", "--help"}, {"apikey", "create", "--help"}, {"apikey", "list", "-h"}, {"apikey", "revoke", "--help"},
		{"ban", "--help"}, {"ban", "add", "--help"}, {"ban", "remove", "--help"}, {"ban", "list", "--help"},
		{"words", "--help"}, {"words", "add", "--help"}, {"words", "remove", "-h"}, {"words", "list", "--help"},
		{"nip98", "--help"}, {"nip98", "keygen", "--help"}, {"nip98", "sign", "--help"}, {"version", "--help"},
	} {
		stdout, stderr, err := cli(t, nil, args...)
		if err != nil || !strings.Contains(stdout, "usage") || stderr != "" {
			t.Errorf("outpost %s: err %v, stdout %d bytes, stderr %q; want the usage on stdout and nothing else", strings.Join(args, " "), err, len(stdout), stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		stdout, _, err := cli(t, nil, args...)
		if err != nil || !strings.HasPrefix(stdout, "outpost "+outpost.Version+"\n") {
			t.Errorf("outpost %s: %v %q", strings.Join(args, " "), err, stdout)
		}
	}
	if _, _, err := cli(t, nil, "version", "extra"); !isUsageError(err) {
		t.Errorf("version extra: %v, want a usage error", err)
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/outpost-relay/outpost", Version: "v0.0.0-20261123114037-2800300abcde+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "2800300abcdef0123456789abcdef0123456789a"},
			{Key: "vcs.time", Value: "2026-11-23T11:40:37Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText("1.2.3", info)
	for _, want := range []string{"outpost 1.2.3\n", "v0.0.0-20261123114037-2800300abcde+dirty", "2800300abcdef0123456789abcdef0123456789a", "modified", "2026-11-23T11:40:37Z", "go1.26.8"} {
		if !strings.Contains(got, want) {
			t.Errorf("version text %q lacks %q", got, want)
		}
	}
	info.Settings = info.Settings[:2]
	if got := versionText("1.2.3", info); strings.Contains(got, "modified") {
		t.Errorf("a clean build says modified: %q", got)
	}
	if got := versionText("1.2.3", &debug.BuildInfo{Main: debug.Module{Path: "github.com/outpost-relay/outpost", Version: "(devel)"}}); !strings.Contains(got, "unknown") {
		t.Errorf("a build without VCS stamps does not say the commit is unknown: %q", got)
	}
}

// "outpost --data-dir X ban list" runs "ban list" on X; it never starts the server.
func TestFlagsBeforeACommand(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	stdout, stderr, err := cli(t, nil, "--data-dir", dir, "ban", "list")
	if err != nil || !strings.HasPrefix(stdout, "PUBKEY") || strings.Contains(stdout+stderr, "serving") {
		t.Fatalf("--data-dir X ban list: %v\nstdout %q\nstderr %q", err, stdout, stderr)
	}
	stdout, _, err = cli(t, nil, "--data-dir="+dir, "apikey", "create", "--name", "ops", "--role", "viewer")
	if err != nil || !strings.HasPrefix(stdout, "opk_") {
		t.Fatalf("--data-dir=X apikey create: %v %q", err, stdout)
	}
	// A flag the command does not take is a usage error, not a server.
	if stdout, _, err := cli(t, nil, "--rate-limit", "5", "ban", "list", "--data-dir", dir); !isUsageError(err) || strings.Contains(stdout, "serving") {
		t.Fatalf("--rate-limit 5 ban list: %v %q", err, stdout)
	}
	if stdout, _, err := cli(t, nil, "--data-dir", dir, "frobnicate"); !isUsageError(err) || !strings.Contains(err.Error(), "frobnicate") || strings.Contains(stdout, "serving") {
		t.Fatalf("--data-dir X frobnicate: %v %q", err, stdout)
	}
}

func TestServeRefusesArguments(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"serve", "extra"}, {"serve", "--data-dir", t.TempDir(), "extra"}} {
		stdout, _, err := cli(t, nil, args...)
		if !isUsageError(err) || !strings.Contains(err.Error(), "extra") || strings.Contains(stdout, "serving") {
			t.Errorf("outpost %s: %v %q, want a usage error naming extra", strings.Join(args, " "), err, stdout)
		}
	}
}

// A usage error is printed once, with a pointer to the help instead of all
// of it, and exits 2; other errors exit 1.
func TestUsageErrorIsPrintedOnce(t *testing.T) {
	t.Parallel()
	_, stderr, err := cli(t, nil, "--rate-limit", "abc")
	if stderr != "" || !isUsageError(err) || !strings.Contains(err.Error(), "a whole number") {
		t.Fatalf("--rate-limit abc: %v, stderr %q", err, stderr)
	}
	var out bytes.Buffer
	if code := report(err, &out); code != 2 || strings.Count(out.String(), "whole number") != 1 || strings.Count(out.String(), "\n") != 2 ||
		!strings.Contains(out.String(), "outpost --help") {
		t.Errorf("report: exit %d, printed %q", code, out.String())
	}
	out.Reset()
	if code := report(errors.New("disk on fire"), &out); code != 1 || out.String() != "outpost: disk on fire\n" {
		t.Errorf("report: exit %d, printed %q", code, out.String())
	}
	if code := report(nil, &out); code != 0 {
		t.Errorf("report(nil) = %d", code)
	}
	_, _, err = cli(t, nil, "ban", "add", "npub1x", "--duration", "1d")
	if !isUsageError(err) || !strings.Contains(err.Error(), "Go duration like 24h") {
		t.Errorf("ban add --duration 1d: %v", err)
	}
}

func TestBadValuesNameTheExpectedForm(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]string{
		"OUTPOST_RATE_LIMIT": "a whole number", "OUTPOST_FAUCET_COOLDOWN": "a Go duration like 24h",
		"OUTPOST_REPORTS_PUBLIC": "true or false", "OUTPOST_PROBE_SLOW_MS": "whole number of milliseconds",
		"OUTPOST_LOG_LEVEL": "debug, info, warn or error", "OUTPOST_MIN_FREE_SPACE": "like 256MiB",
	} {
		_, _, err := cli(t, map[string]string{env: "1d"}, "serve")
		if err == nil || !strings.Contains(err.Error(), env) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=1d: %v, want it named with %q", env, err, want)
		}
	}
}

// The help promises an OUTPOST_* twin only for settings that have one.
func TestAdminHelpPromisesOnlyRealTwins(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"apikey", "create", "--help"}, {"ban", "add", "--help"}, {"ban", "list", "--help"}} {
		stdout, _, _ := cli(t, nil, args...)
		for _, twin := range []string{"OUTPOST_NAME", "OUTPOST_ROLE", "OUTPOST_REASON", "OUTPOST_DURATION", "OUTPOST_STATE"} {
			if strings.Contains(stdout, twin) {
				t.Errorf("outpost %s --help promises %s, which nothing reads:\n%s", strings.Join(args[:2], " "), twin, stdout)
			}
		}
		if !strings.Contains(stdout, "OUTPOST_DATA_DIR") {
			t.Errorf("outpost %s --help does not mention OUTPOST_DATA_DIR", strings.Join(args[:2], " "))
		}
	}
}

// KEY=$(outpost apikey create ...) is the key and nothing else.
func TestAPIKeyCreatePrintsOnlyTheKey(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	stdout, stderr, err := cli(t, map[string]string{"OUTPOST_DATA_DIR": dir}, "apikey", "create", "--name", "ci", "--role", "admin")
	if err != nil || !strings.HasPrefix(stdout, "opk_") || strings.Count(stdout, "\n") != 1 || strings.ContainsAny(strings.TrimSpace(stdout), " \t") {
		t.Fatalf("stdout %q (%v), want the key alone", stdout, err)
	}
	if !strings.Contains(stderr, "shown only now") || !strings.Contains(stderr, "ci") {
		t.Errorf("stderr %q, want what was created", stderr)
	}
}

func TestAdminRefusesADataDirWithoutDatabase(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nowhere")
	for _, dir := range []string{empty, missing} {
		_, _, err := cli(t, map[string]string{"OUTPOST_DATA_DIR": dir}, "apikey", "list")
		if err == nil || !strings.Contains(err.Error(), "--data-dir") || !strings.Contains(err.Error(), "OUTPOST_DATA_DIR") || !strings.Contains(err.Error(), dir) {
			t.Errorf("apikey list in %s: %v, want a refusal naming the dir and the setting", dir, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "badger")); !os.IsNotExist(err) {
			t.Errorf("a database was created in %s", dir)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s was created", missing)
	}
}

func TestProbeIntervalAloneWorks(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(t, map[string]string{"OUTPOST_PROBE_INTERVAL": "1s"})
	if err != nil {
		t.Fatalf("OUTPOST_PROBE_INTERVAL=1s: %v", err)
	}
	if cfg.Mintdir.ProbeTimeout <= 0 || cfg.Mintdir.ProbeTimeout >= time.Second {
		t.Errorf("probe timeout %v with a 1s interval", cfg.Mintdir.ProbeTimeout)
	}
	cfg, _ = parseConfig(t, nil)
	if cfg.Mintdir.ProbeTimeout != 10*time.Second {
		t.Errorf("default probe timeout %v, want 10s", cfg.Mintdir.ProbeTimeout)
	}
	if _, err := parseConfig(t, map[string]string{"OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "2s"}); err == nil ||
		!strings.Contains(err.Error(), "OUTPOST_PROBE_TIMEOUT") || !strings.Contains(err.Error(), "(1s)") {
		t.Errorf("a timeout above the interval: %v", err)
	}
}

func parseConfig(t *testing.T, env map[string]string) (*Config, error) {
	t.Helper()
	return parseConfigIn(t, env, 0)
}

// parseConfigIn resolves env as outpost would in a container of memory
// bytes (0: none).
func parseConfigIn(t *testing.T, env map[string]string, memory settings.Bytes) (*Config, error) {
	t.Helper()
	cf := newConfigFlags(newFlagSet("serve"))
	cf.container = func() settings.Bytes { return memory }
	return cf.resolve(func(k string) string { return env[k] })
}

// Help shows durations as people write them.
func TestHelpShowsDurationsAsWritten(t *testing.T) {
	t.Parallel()
	stdout, _, _ := cli(t, nil, "serve", "--help")
	if strings.Contains(stdout, "0m0s") || !strings.Contains(stdout, "(default 24h)") {
		t.Errorf("serve --help:\n%s", stdout)
	}
}

// A busy port or a data dir that cannot be written fails before anything is
// written, naming the setting.
func TestBusyPortAndUnwritableDataDirFailFirst(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "data")
	_, _, err = cli(t, map[string]string{"OUTPOST_ADDR": ln.Addr().String(), "OUTPOST_DATA_DIR": dir})
	if err == nil || !strings.Contains(err.Error(), "OUTPOST_ADDR") {
		t.Errorf("busy port: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the data dir was created before the port was found busy (%v)", err)
	}

	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, nil, 0o600)
	_, _, err = cli(t, map[string]string{"OUTPOST_DATA_DIR": filepath.Join(file, "data")})
	if err == nil || !strings.Contains(err.Error(), "OUTPOST_DATA_DIR") {
		t.Errorf("a data dir under a file: %v", err)
	}

	ro := testkit.Tmpfs(t, 1, "ro")
	_, _, err = cli(t, map[string]string{"OUTPOST_DATA_DIR": ro})
	if err == nil || !strings.Contains(err.Error(), "OUTPOST_DATA_DIR") || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a read-only data dir: %v", err)
	}
}

// Listening on every interface without a public URL warns and says what to
// set, and advertises a URL a client can use on this machine, not ws://[::]:port.
func TestAllInterfacesWithoutPublicURL(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8086", "[::]:8086"} {
		tcp, _ := net.ResolveTCPAddr("tcp", addr)
		url, warning := publicURL("", tcp)
		if url != "http://localhost:8086" || !strings.Contains(warning, "OUTPOST_PUBLIC_URL") || !strings.Contains(warning, "--public-url") {
			t.Errorf("%s: %q, %q", addr, url, warning)
		}
	}
	tcp, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:8080")
	if url, warning := publicURL("", tcp); url != "http://127.0.0.1:8080" || warning != "" {
		t.Errorf("127.0.0.1: %q, %q", url, warning)
	}
	tcp, _ = net.ResolveTCPAddr("tcp", "0.0.0.0:8080")
	if url, warning := publicURL("https://outpost.example", tcp); url != "https://outpost.example" || warning != "" {
		t.Errorf("with a public URL: %q, %q", url, warning)
	}
}

func isUsageError(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}
