package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/strfry"
	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// strfryConfig is the strfry-policy command's settings.
type strfryConfig struct {
	From     string        `flag:"from" usage:"the outpost whose ban list to follow: its base URL (https://outpost.example) or its ban list's (https://outpost.example/banlist)"`
	Cache    string        `flag:"cache" usage:"file the list is kept in, so the plugin starts offline (default: in the user's cache dir)"`
	Interval time.Duration `flag:"interval" usage:"how often the ban list is asked for changes (an empty answer is cheap for both; a new ban is enforced within this)"`
	logSetting
}

// newStrfryFlags binds the strfry-policy command's settings to a new flag set.
func newStrfryFlags() (*flag.FlagSet, *strfryConfig) {
	fs := newFlagSet("strfry-policy")
	c := &strfryConfig{Interval: 2 * time.Second}
	settings.Bind(fs, c)
	settings.Bind(fs, &c.logSetting)
	return fs, c
}

// strfryCLI runs the strfry write-policy plugin on stdin/stdout.
func strfryCLI(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, c := newStrfryFlags()
	fs.Usage = func() {
		usage(fs, "outpost strfry-policy --from <outpost URL> (in strfry.conf: relay.writePolicy.plugin; logs go to stderr, into strfry's log)", settings.EnvName)
	}
	if err := parseFlags(fs, "strfry-policy", args, stdout); err != nil {
		return err
	}
	if _, err := settings.FromEnv(fs, getenv, settings.EnvName); err != nil {
		return err
	}
	if !strings.HasPrefix(c.From, "http://") && !strings.HasPrefix(c.From, "https://") {
		return settings.Errorf("from", "must be the http(s) URL of an outpost or its ban list, got %q", c.From)
	}
	if c.Interval < time.Second {
		return settings.Errorf("interval", "must be at least 1s")
	}
	if c.Cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return settings.Errorf("cache", "no user cache dir (%v); name a file", err)
		}
		sum := sha256.Sum256([]byte(c.From))
		c.Cache = filepath.Join(dir, "outpost", "strfry-policy-"+hex.EncodeToString(sum[:6])+".json")
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.Level(c.LogLevel)}))
	return strfry.Run(ctx, strfry.Options{From: c.From, Cache: c.Cache, Interval: c.Interval, Log: log}, stdin, stdout)
}
