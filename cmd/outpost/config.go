package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"

	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/httpapi/mintdirapi"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/nostr/contacts"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	pub "github.com/outpost-relay/outpost/internal/nostr/publish"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/wot"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
	"github.com/outpost-relay/outpost/web"
)

// Config is everything outpost is configured with. Each tagged field is a
// flag with an OUTPOST_* environment twin; a flag given on the command line
// wins. The services' settings are declared, defaulted and checked in their
// own packages; this file only binds them.
type Config struct {
	dataDirSetting // --data-dir
	logSetting     // --log-level

	Addr            string         `flag:"addr" usage:"listen address (host:port)"`
	PublicURL       string         `flag:"public-url" usage:"external base URL, e.g. https://outpost.example (default: http://<addr>)"`
	SecretKey       string         `flag:"secret-key" usage:"the service's Nostr secret key, hex or nsec (default: generated and kept in the data dir)"`
	AdminPubKeys    []string       `flag:"admin-pubkeys" usage:"public keys (npub or hex, comma-separated) allowed to use NIP-86 relay management"`
	RateLimit       int            `flag:"rate-limit" usage:"requests per minute per client IP on the REST services; 0 disables"`
	TrustedProxies  []string       `flag:"trusted-proxies" usage:"CIDRs of reverse proxies whose X-Forwarded-For is trusted (comma-separated)"`
	ShutdownTimeout time.Duration  `flag:"shutdown-timeout" usage:"how long shutdown waits for requests and clients"`
	MetricsAddr     string         `flag:"metrics-addr" usage:"serve Prometheus /metrics on this address (e.g. 127.0.0.1:9464) instead of the main listener; off: nowhere"`
	AccessLog       bool           `flag:"access-log" usage:"log every REST request (method, path, status, bytes, duration, client IP) at level info"`
	MemoryLimit     settings.Bytes `flag:"memory-limit" usage:"soft limit of outpost's Go heap, which holds badger's memtables and cache: near it the garbage collector runs sooner and gives memory back to the system; 0: none (the heap may grow to twice what is live); GOMEMLIMIT, when set, wins; default: two thirds of the container's memory when that is less (see --cache-size too)"`

	RelayName        string `flag:"relay-name" usage:"relay name in NIP-11"`
	RelayDescription string `flag:"relay-description" usage:"relay description in NIP-11"`
	RelayContact     string `flag:"relay-contact" usage:"relay contact in NIP-11"`
	RelayPubKey      string `flag:"relay-pubkey" usage:"the operator's contact key (npub or hex), NIP-11 pubkey"`
	Relay            relay.Limits
	RelayWrite       policies.WriteSettings

	BanlistMount string `flag:"banlist-mount" usage:"mount path of the ban-list service"`
	MintdirMount string `flag:"mintdir-mount" usage:"mount path of the mint directory"`
	FaucetMount  string `flag:"faucet-mount" usage:"mount path of the faucet"`
	WotMount     string `flag:"wot-mount" usage:"mount path of the web of trust's API (GET <mount>/{npub})"`

	Store      kv.Settings
	Banlist    banlist.Settings
	BanlistAPI banlistapi.Settings
	Mintdir    mintdir.Settings
	MintdirAPI mintdirapi.Settings
	Audit      audit.Settings
	Faucet     faucet.Settings
	Upstream   upstream.Settings
	Publish    pub.Settings
	Wot        wot.Settings
	WotRelays  contacts.Settings
	ReportBan  banlist.ReportBanSettings

	fittedTo settings.Bytes // the container's memory, when MemoryLimit or CacheSize were sized to it (fitMemory)
}

// The settings more than one command takes, each declared once here.
type (
	// dataDirSetting is serve's data dir, and that of every command that
	// opens one: the admin commands, backup and restore.
	dataDirSetting struct {
		DataDir string `flag:"data-dir" usage:"directory for the database, the service key and the admin socket"`
	}
	// logSetting is the level of serve's logs and strfry-policy's.
	logSetting struct {
		LogLevel logLevel `flag:"log-level" usage:"debug, info, warn or error"`
	}
)

var defaultDataDir = dataDirSetting{DataDir: "./data"}

// dataDirTwin is the environment twin of the commands that take only the
// data dir from the environment: their other flags are their own.
func dataDirTwin(flagName string) string {
	if flagName == "data-dir" {
		return settings.EnvName(flagName)
	}
	return ""
}

func defaultConfig() *Config {
	return &Config{
		Addr: "127.0.0.1:8080", dataDirSetting: defaultDataDir, RateLimit: 120, ShutdownTimeout: 10 * time.Second,
		RelayName:        "outpost",
		RelayDescription: "A community relay with a ban list, a test-sats faucet and a Cashu mint directory",
		BanlistMount:     "/banlist", MintdirMount: "/mintdir", FaucetMount: "/faucet", WotMount: "/wot",
		MemoryLimit: defaultMemoryLimit, Store: kv.DefaultSettings(), Relay: relay.DefaultLimits(), BanlistAPI: banlistapi.DefaultSettings(), Mintdir: mintdir.DefaultSettings(), MintdirAPI: mintdirapi.DefaultSettings(),
		Audit: audit.DefaultSettings(), Faucet: faucet.DefaultSettings(), Upstream: upstream.DefaultSettings(), Wot: wot.DefaultSettings(),
		WotRelays: contacts.DefaultSettings(), ReportBan: banlist.DefaultReportBanSettings(),
		RelayWrite: policies.DefaultWriteSettings(),
	}
}

// defaultMemoryLimit and memoryOverCache size the Go heap. What is live
// besides the cache is mostly badger's: up to three 16 MiB memtables, and
// the table builders of a flush and of compactions, which hold each table
// they write whole (kv: 1 MiB tables, two compactors). Ingesting 500,000
// events of the mix from 16 connections kept up to 150 MB live; under a
// limit of 224 MiB the collector used 3.9% of the CPU (1.1% under 384 MiB)
// and outpost's anonymous memory peaked at 217 MiB, against 359 MiB with
// 2 MiB tables under 384 MiB, where the collector let the heap grow to
// twice what was live (BENCHMARKS.md §13, issue 53). Under a limit below
// what is live the collector runs all the time: 200,000 events with 2 MiB
// tables under 224 MiB collected 8× as often. The floor is what a relay
// needs at all, not what it needs to ingest fast.
const (
	defaultMemoryLimit settings.Bytes = 224 << 20
	memoryOverCache    settings.Bytes = 96 << 20
)

// configFlags binds every setting to a flag on fs.
type configFlags struct {
	fs        *flag.FlagSet
	c         *Config
	container func() settings.Bytes // the memory of the container outpost runs in (containerMemory)
}

func newConfigFlags(fs *flag.FlagSet) *configFlags {
	c := defaultConfig()
	for _, g := range c.settingGroups() {
		for _, s := range g.settings {
			settings.Bind(fs, s)
		}
	}
	return &configFlags{fs: fs, c: c, container: func() settings.Bytes { return containerMemory(os.DirFS("/")) }}
}

// settingGroup is a part of serve's settings: docs/configuration.md has a
// table of each, under its title.
type settingGroup struct {
	title    string
	settings []any // structs of tagged fields, for settings.Bind
}

// settingGroups are all of c's settings, by the part of outpost they tune.
func (c *Config) settingGroups() []settingGroup {
	return []settingGroup{
		{"Server, relay information and mount paths", []any{c, &c.dataDirSetting, &c.logSetting}},
		{"Storage and memory", []any{&c.Store}},
		{"Relay limits", []any{&c.Relay, &c.RelayWrite}},
		{"Ban list", []any{&c.Banlist, &c.BanlistAPI}},
		{"Mint directory", []any{&c.Mintdir, &c.MintdirAPI}},
		{"Mint audits", []any{&c.Audit}},
		{"Faucet", []any{&c.Faucet}},
		{"Upstream relays", []any{&c.Upstream}},
		{"Published events", []any{&c.Publish}},
		{"Web of trust", []any{&c.Wot, &c.WotRelays, &c.ReportBan}},
	}
}

// resolve reads the environment for the flags not given on the command line
// (parsed already), sizes what memory the operator left to the defaults to
// the container outpost runs in, and validates.
func (f *configFlags) resolve(getenv func(string) string) (*Config, error) {
	given, err := settings.FromEnv(f.fs, getenv, settings.EnvName)
	if err != nil {
		return nil, err
	}
	container := f.container()
	f.c.fitMemory(container, given["memory-limit"] || getenv("GOMEMLIMIT") != "", given["cache-size"])
	f.c.Store.Container = container
	return f.c, f.c.validate()
}

// validate checks outpost's own settings, then each service's.
func (c *Config) validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) { errs = append(errs, settings.Errorf(flag, format, args...)) }
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("addr", "%v", err)
	}
	if c.DataDir == "" {
		bad("data-dir", "must not be empty")
	} else if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			bad("public-url", "must be an http(s) URL with a host and no path, got %q", c.PublicURL)
		}
		c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	}
	if c.RateLimit < 0 {
		bad("rate-limit", "must be 0 or more")
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown-timeout", "must be positive")
	}
	if c.MetricsAddr != "" && c.MetricsAddr != metricsOff {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			bad("metrics-addr", "a host:port or %q, got %q", metricsOff, c.MetricsAddr)
		}
	}
	if c.SecretKey != "" {
		if _, err := parseSecretKey(c.SecretKey); err != nil {
			bad("secret-key", "%v", err)
		}
	}
	errs = append(errs, c.validateLists(), c.validateMounts(), c.validateMemory())
	errs = append(errs, c.Store.Valid(), c.Relay.Valid(), c.Banlist.Valid(), c.BanlistAPI.Valid(), c.Mintdir.Valid(), c.MintdirAPI.Valid(), c.Audit.Valid(), c.Faucet.Valid(), c.Upstream.Valid(), c.Publish.Valid(), c.Wot.Valid(), c.WotRelays.Valid(), c.ReportBan.Valid(), c.RelayWrite.Valid())
	return errors.Join(errs...)
}

// validateMemory checks that the memory limit leaves the collector room
// above the cache and the rest (see memoryOverCache).
func (c *Config) validateMemory() error {
	cache := cmp.Or(c.Store.CacheSize, kv.DefaultSettings().CacheSize)
	if least := cache + memoryOverCache; c.MemoryLimit != 0 && c.MemoryLimit < least {
		return settings.Errorf("memory-limit", "must be 0 (none) or at least %v (the cache-size of %v and %v besides), or the garbage collector would run all the time", least, cache, settings.Bytes(memoryOverCache))
	}
	return nil
}

// validateLists checks the admins' and the operator's keys (keeping them as
// hex) and the trusted proxies (a bare address is a one-address range).
func (c *Config) validateLists() error {
	var errs []error
	for i, s := range c.AdminPubKeys {
		pk, err := pubkey.Parse(s)
		if err != nil {
			errs = append(errs, settings.Errorf("admin-pubkeys", "%q is not a public key", s))
		}
		c.AdminPubKeys[i] = pk
	}
	if c.RelayPubKey != "" {
		pk, err := pubkey.Parse(c.RelayPubKey)
		if err != nil {
			errs = append(errs, settings.Errorf("relay-pubkey", "%q is not a public key", c.RelayPubKey))
		}
		c.RelayPubKey = pk
	}
	for i, s := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(s); err == nil {
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil {
			c.TrustedProxies[i] = netip.PrefixFrom(a, a.BitLen()).String()
			continue
		}
		errs = append(errs, settings.Errorf("trusted-proxies", "%q is not a CIDR", s))
	}
	return errors.Join(errs...)
}

// validateMounts checks that each service has a mount path of its own.
func (c *Config) validateMounts() error {
	var errs []error
	mounts := map[string]string{}
	for _, m := range []struct{ flag, path string }{
		{"banlist-mount", c.BanlistMount}, {"mintdir-mount", c.MintdirMount}, {"faucet-mount", c.FaucetMount}, {"wot-mount", c.WotMount},
	} {
		switch other, taken := mounts[m.path]; {
		case !validMount(m.path):
			errs = append(errs, settings.Errorf(m.flag, "a mount path looks like /name, got %q", m.path))
		case taken:
			errs = append(errs, settings.Errorf(m.flag, "%s is the mount path of --%s too", m.path, other))
		case web.Overlaps(m.path):
			errs = append(errs, settings.Errorf(m.flag, "%s takes paths the pages use (/static/, /qr)", m.path))
		}
		mounts[m.path] = m.flag
	}
	return errors.Join(errs...)
}

func validMount(m string) bool {
	return strings.HasPrefix(m, "/") && m != "/" && !strings.HasSuffix(m, "/") && !strings.ContainsAny(m, " ?#*{}")
}

// usage prints a command's synopsis and flags to fs.Output(), each flag
// with its environment twin when twin names one.
func usage(fs *flag.FlagSet, synopsis string, twin func(flag string) string) {
	w := fs.Output()
	fmt.Fprintf(w, "usage: %s\n\nflags:\n", synopsis)
	fs.VisitAll(func(fl *flag.Flag) {
		env := ""
		if t := twin(fl.Name); t != "" {
			env = "  [" + t + "]"
		}
		def := ""
		if fl.DefValue != "" && fl.DefValue != "false" && !statesDefault(fl.Usage) {
			def = fmt.Sprintf(" (default %s)", fl.DefValue)
		}
		fmt.Fprintf(w, "  --%s%s\n      %s%s\n", fl.Name, env, fl.Usage, def)
	})
}

// statesDefault reports whether a help text says its default itself, as in
// "(default: generated)" or "(default 10s, or …)", so that no second one is
// added; "(default_limit)", a name, is not one.
func statesDefault(usage string) bool {
	return strings.Contains(usage, "(default ") || strings.Contains(usage, "(default:")
}

// ensureDir creates the data dir (or a directory in it) with private
// permissions, and makes sure outpost can write there before anything
// else is written.
func ensureDir(dir string) error {
	bad := func(err error) error {
		return fmt.Errorf("the data dir %s (--data-dir, OUTPOST_DATA_DIR) cannot be used: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return bad(err)
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return bad(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// logLevel is slog's level, with an error that says which levels exist.
type logLevel slog.Level

func (l *logLevel) UnmarshalText(b []byte) error {
	var v slog.Level
	if err := v.UnmarshalText(b); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	*l = logLevel(v)
	return nil
}

func (l logLevel) MarshalText() ([]byte, error) {
	return []byte(strings.ToLower(slog.Level(l).String())), nil
}
