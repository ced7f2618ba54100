package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/pubkey"
)

// Config is everything outpost is configured with. Each field is a flag with
// an OUTPOST_* environment twin; a flag given on the command line wins.
type Config struct {
	Addr            string
	DataDir         string
	PublicURL       string // derived from the bound address when empty
	SecretKey       string // service key (hex or nsec); generated in the data dir when empty
	AdminAPIKey     string
	AdminPubKeys    []string // hex, parsed from npub or hex
	RateLimit       int      // requests per minute per client IP; 0 disables
	LogLevel        slog.Level
	TrustedProxies  []string
	ShutdownTimeout time.Duration

	RelayName, RelayDescription, RelayContact string

	Relay   RelayConfig
	Banlist BanlistConfig
	Mintdir MintdirConfig
	Faucet  FaucetConfig
}

// BanlistConfig configures the ban-list service.
type BanlistConfig struct {
	Mount         string
	ReportsPublic bool
	ReportsLimit  int // POST /reports per client IP per minute
}

// configFlags registers every configuration flag on fs.
type configFlags struct {
	fs     *flag.FlagSet
	c      *Config
	lists  map[string]*string
	level  string
	errors []error
}

func newConfigFlags(fs *flag.FlagSet) *configFlags {
	c := &Config{}
	f := &configFlags{fs: fs, c: c, lists: map[string]*string{}}
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address (host:port)")
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory for the database and the service key")
	fs.StringVar(&c.PublicURL, "public-url", "", "external base URL, e.g. https://outpost.example (default: http://<addr>)")
	fs.StringVar(&c.SecretKey, "secret-key", "", "the service's Nostr secret key, hex or nsec (default: generated and kept in the data dir)")
	fs.StringVar(&c.AdminAPIKey, "admin-api-key", "", "a bootstrap admin API key for the ban-list admin API")
	f.list("admin-pubkeys", "public keys (npub or hex, comma-separated) allowed to use NIP-86 relay management")
	fs.IntVar(&c.RateLimit, "rate-limit", 120, "requests per minute per client IP on the REST services; 0 disables")
	fs.StringVar(&f.level, "log-level", "info", "debug, info, warn or error")
	f.list("trusted-proxies", "CIDRs of reverse proxies whose X-Forwarded-For is trusted (comma-separated)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long shutdown waits for requests and clients")
	fs.StringVar(&c.RelayName, "relay-name", "outpost", "relay name in NIP-11")
	fs.StringVar(&c.RelayDescription, "relay-description", "A community relay with a ban list, a test-sats faucet and a Cashu mint directory", "relay description in NIP-11")
	fs.StringVar(&c.RelayContact, "relay-contact", "", "relay contact in NIP-11")
	fs.StringVar(&c.Banlist.Mount, "banlist-mount", "/banlist", "mount path of the ban-list service")
	fs.BoolVar(&c.Banlist.ReportsPublic, "reports-public", false, "serve GET /banlist/reports without an API key")
	fs.IntVar(&c.Banlist.ReportsLimit, "reports-rate-limit", 10, "POST /banlist/reports per minute per client IP; 0 disables")
	registerRelayFlags(f)
	registerMintdirFlags(f)
	registerFaucetFlags(f)
	return f
}

// list registers a comma-separated list flag.
func (f *configFlags) list(name, usage string) *string {
	p := new(string)
	f.lists[name] = p
	f.fs.StringVar(p, name, "", usage)
	return p
}

// envName is the environment twin of a flag: data-dir → OUTPOST_DATA_DIR.
func envName(flagName string) string {
	return "OUTPOST_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse reads args, then the environment for flags not given, and validates.
func (f *configFlags) parse(args []string, getenv func(string) string) (*Config, error) {
	if err := f.fs.Parse(args); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var errs []error
	f.fs.VisitAll(func(fl *flag.Flag) {
		if given[fl.Name] {
			return
		}
		if v := getenv(envName(fl.Name)); v != "" {
			if err := fl.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: invalid value %q: %v", envName(fl.Name), v, err))
			}
		}
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f.c, f.validate()
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// bad names the setting in a validation error.
func bad(flagName, format string, args ...any) error {
	return fmt.Errorf("invalid --%s (%s): %s", flagName, envName(flagName), fmt.Sprintf(format, args...))
}

func (f *configFlags) validate() error {
	c := f.c
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, bad("addr", "%v", err))
	}
	if c.DataDir == "" {
		errs = append(errs, bad("data-dir", "must not be empty"))
	} else if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			errs = append(errs, bad("public-url", "must be an http(s) URL with a host and no path, got %q", c.PublicURL))
		}
		c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	}
	for _, s := range split(*f.lists["admin-pubkeys"]) {
		pk, err := pubkey.Parse(s)
		if err != nil {
			errs = append(errs, bad("admin-pubkeys", "%q is not a public key", s))
			continue
		}
		c.AdminPubKeys = append(c.AdminPubKeys, pk)
	}
	for _, s := range split(*f.lists["trusted-proxies"]) {
		if _, err := netip.ParsePrefix(s); err != nil {
			if a, err2 := netip.ParseAddr(s); err2 == nil {
				s = netip.PrefixFrom(a, a.BitLen()).String()
			} else {
				errs = append(errs, bad("trusted-proxies", "%q is not a CIDR", s))
				continue
			}
		}
		c.TrustedProxies = append(c.TrustedProxies, s)
	}
	if c.RateLimit < 0 {
		errs = append(errs, bad("rate-limit", "must be 0 or more"))
	}
	if c.Banlist.ReportsLimit < 0 {
		errs = append(errs, bad("reports-rate-limit", "must be 0 or more"))
	}
	if err := c.LogLevel.UnmarshalText([]byte(f.level)); err != nil {
		errs = append(errs, bad("log-level", "must be debug, info, warn or error"))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, bad("shutdown-timeout", "must be positive"))
	}
	if c.AdminAPIKey != "" && len(c.AdminAPIKey) < 16 {
		errs = append(errs, bad("admin-api-key", "must be at least 16 characters"))
	}
	if err := validMount(c.Banlist.Mount); err != nil {
		errs = append(errs, bad("banlist-mount", "%v", err))
	}
	errs = append(errs, validateRelay(f), validateMintdir(f), validateFaucet(f))
	return errors.Join(errs...)
}

func validMount(m string) error {
	if !strings.HasPrefix(m, "/") || m == "/" || strings.HasSuffix(m, "/") || strings.ContainsAny(m, " ?#*{}") {
		return fmt.Errorf("a mount path looks like /name, got %q", m)
	}
	return nil
}

// usage prints a command's flags with their environment twins.
func usage(fs *flag.FlagSet, w io.Writer, synopsis string) func() {
	return func() {
		fmt.Fprintf(w, "usage: %s\n\nflags (each also read from its OUTPOST_* environment variable):\n", synopsis)
		fs.VisitAll(func(fl *flag.Flag) {
			def := ""
			if fl.DefValue != "" && fl.DefValue != "false" {
				def = fmt.Sprintf(" (default %s)", fl.DefValue)
			}
			fmt.Fprintf(w, "  --%s  [%s]\n      %s%s\n", fl.Name, envName(fl.Name), fl.Usage, def)
		})
	}
}

// ensureDir creates the data dir with private permissions.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	return nil
}
