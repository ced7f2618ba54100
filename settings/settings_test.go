package settings_test

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/settings"
)

type example struct {
	Name    string        `flag:"name" usage:"a name"`
	On      bool          `flag:"on" usage:"a switch"`
	N       int           `flag:"n" usage:"a count"`
	Big     int64         `flag:"big" usage:"a large count"`
	Wait    time.Duration `flag:"wait" usage:"a duration"`
	Slow    time.Duration `flag:"slow-ms,ms" usage:"milliseconds"`
	List    []string      `flag:"list" usage:"a list"`
	Level   slog.Level    `flag:"level" usage:"a text value"`
	Skipped int           // no tag: not a setting
}

func TestBind(t *testing.T) {
	s := example{Name: "x", N: 3, Wait: time.Second, Slow: 2 * time.Second, List: []string{"a", "b"}, Level: slog.LevelWarn}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	settings.Bind(fs, &s)
	defaults := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { defaults[f.Name] = f.DefValue })
	want := map[string]string{"name": "x", "on": "false", "n": "3", "big": "0", "wait": "1s", "slow-ms": "2000", "list": "a,b", "level": "WARN"}
	for k, v := range want {
		if defaults[k] != v {
			t.Errorf("default of --%s = %q, want %q", k, defaults[k], v)
		}
	}
	if len(defaults) != len(want) {
		t.Errorf("flags %v, want %v", defaults, want)
	}
	err := fs.Parse([]string{"--name", "y", "--on", "--n", "4", "--big", "5000000000", "--wait", "2m", "--slow-ms", "300",
		"--list", " c, ,d ", "--level", "debug"})
	if err != nil {
		t.Fatal(err)
	}
	got := example{Name: "y", On: true, N: 4, Big: 5_000_000_000, Wait: 2 * time.Minute, Slow: 300 * time.Millisecond,
		List: []string{"c", "d"}, Level: slog.LevelDebug}
	if s.Name != got.Name || s.On != got.On || s.N != got.N || s.Big != got.Big || s.Wait != got.Wait || s.Slow != got.Slow ||
		strings.Join(s.List, "|") != "c|d" || s.Level != got.Level {
		t.Errorf("got %+v, want %+v", s, got)
	}
	if err := fs.Set("slow-ms", "1.5"); err == nil {
		t.Error("a fraction of a millisecond was accepted")
	}
}

func TestBindPanicsOnAnUnknownType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	settings.Bind(flag.NewFlagSet("t", flag.ContinueOnError), &struct {
		M map[string]int `flag:"m"`
	}{})
}

func TestErrorNamesTheFlagAndItsTwin(t *testing.T) {
	err := settings.Errorf("faucet-quote-ttl", "must be between %s and %s", "10s", "1h")
	if got := err.Error(); got != "invalid --faucet-quote-ttl (OUTPOST_FAUCET_QUOTE_TTL): must be between 10s and 1h" {
		t.Errorf("got %q", got)
	}
}
