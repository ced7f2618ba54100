package settings_test

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/settings"
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

// A bad value says what form was expected, in words (the flag package's own
// integer and duration parsers only say "parse error").
func TestBadValuesNameTheExpectedForm(t *testing.T) {
	tests := []struct{ flag, value, want string }{
		{"n", "abc", "a whole number"},
		{"big", "1.5", "a whole number"},
		{"wait", "1d", "a Go duration like 24h"},
		{"wait", "soon", "a Go duration like 24h"},
		{"on", "maybe", "true or false"},
		{"slow-ms", "fast", "a whole number of milliseconds"},
	}
	for _, tt := range tests {
		var s example
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		settings.Bind(fs, &s)
		err := fs.Set(tt.flag, tt.value)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "parse error") {
			t.Errorf("--%s=%s: %v, want an error saying %q", tt.flag, tt.value, err, tt.want)
		}
	}
}

// Durations are shown as people write them: 24h, not 24h0m0s.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 2 * time.Minute: "2m", 90 * time.Second: "1m30s",
		0: "0s", 1500 * time.Millisecond: "1.5s", time.Hour + 5*time.Second: "1h0m5s", 336 * time.Hour: "336h",
	} {
		if got := settings.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	var s example
	s.Wait = 24 * time.Hour
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	settings.Bind(fs, &s)
	if got := fs.Lookup("wait").DefValue; got != "24h" {
		t.Errorf("the default of a 24h duration is shown as %q", got)
	}
}

func TestBytes(t *testing.T) {
	for in, want := range map[string]settings.Bytes{
		"0": 0, "512": 512, "64KiB": 64 << 10, "256MiB": 256 << 20, "1GiB": 1 << 30, "2gb": 2e9, "100MB": 100e6, "1.5GiB": 3 << 29, " 10 MiB ": 10 << 20,
	} {
		var b settings.Bytes
		if err := b.UnmarshalText([]byte(in)); err != nil || b != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1MiB", "10XB", "1e30GiB"} {
		var b settings.Bytes
		if err := b.UnmarshalText([]byte(in)); err == nil || !strings.Contains(err.Error(), "like 256MiB") {
			t.Errorf("%q: %v, want an error naming the form", in, err)
		}
	}
	for b, want := range map[settings.Bytes]string{0: "0", 512: "512B", 256 << 20: "256MiB", 1 << 30: "1GiB", 1536 << 20: "1.5GiB", 100e6: "95.4MiB"} {
		if got := b.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(b), got, want)
		}
	}
}

// A flag given on the command line wins over its twin; a flag without a
// twin reads nothing; every bad value is named by its variable.
func TestFromEnv(t *testing.T) {
	s := example{Name: "x"}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	settings.Bind(fs, &s)
	if err := fs.Parse([]string{"--n", "4"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OUTPOST_N": "5", "OUTPOST_NAME": "y", "OUTPOST_ON": "true", "OUTPOST_WAIT": "soon", "OUTPOST_BIG": "many"}
	twin := func(name string) string {
		if name == "on" {
			return ""
		}
		return settings.EnvName(name)
	}
	given, err := settings.FromEnv(fs, func(k string) string { return env[k] }, twin)
	if s.N != 4 || s.Name != "y" || s.On || !given["n"] || !given["name"] || given["on"] || given["list"] {
		t.Errorf("settings %+v, given %v", s, given)
	}
	if err == nil || !strings.Contains(err.Error(), "OUTPOST_WAIT=soon") || !strings.Contains(err.Error(), "OUTPOST_BIG=many") {
		t.Errorf("bad values: %v, want both named", err)
	}
}
