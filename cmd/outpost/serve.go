package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	pub "github.com/outpost-relay/outpost/internal/nostr/publish"
	"github.com/outpost-relay/outpost/internal/ops/metrics"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/wot"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
	"github.com/outpost-relay/outpost/web"
)

// deps is what every service's wiring gets.
type deps struct {
	cfg     *Config
	log     *slog.Logger
	store   *store.Store
	relay   *relay.Relay
	banList *policies.BanList // the snapshot the relay enforces
	sink    pub.Sink          // where events the service signs go: the relay, and OUTPOST_PUBLISH_RELAYS
	// publishing says how the list's publication to OUTPOST_PUBLISH_RELAYS goes; nil when there are none
	publishing func() []banlist.PublishCheck
	// offer gives the publish relays what was signed before the start, if they lack it; nil when there are none
	offer     func(*nostr.Event)
	publicURL string
	secretKey string // service key, hex
	pubKey    string // service key, hex
	metrics   *metrics.Metrics
	embedded  *devmint.Mint // the faucet's test mint, without a mint URL set; nil with one
	wot       *wot.WoT      // the web of trust, which the services ask
	adminKeys *adminKeys    // set by wireBanlist, read by the services wired after it
}

// adminKeys is the ban list's service once wireBanlist has made it: other
// services' admin routes (the audit wallet's) take its admin API keys.
type adminKeys struct{ svc *banlist.Service }

// component is one service wired into the program.
type component struct {
	api  httpapi.Service
	jobs []func(ctx context.Context) // background work that runs until ctx ends
	// authors lists pubkeys whose kind-0 profiles the component reads
	// (followed on upstream relays).
	authors func(ctx context.Context) []string
	// follow are more events the component reads (followed on upstream
	// relays).
	follow []nostr.Filter
}

// expirySweep is how often events past their NIP-40 expiration are deleted;
// queries leave them out from the moment they expire.
const expirySweep = 10 * time.Minute

var libLogs sync.Once

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	// Route the libraries' loggers into ours: khatru uses the standard log
	// package, go-nostr package variables, set once since goroutines of
	// its clients read them without a lock.
	slog.SetDefault(log)
	libLogs.Do(func() {
		h := slog.Default().Handler()
		nostr.InfoLogger = slog.NewLogLogger(h, slog.LevelInfo)
		nostr.DebugLogger = slog.NewLogLogger(h, slog.LevelDebug)
	})
	return log
}

// openStore opens the store in cfg's data dir; one of another format is
// refused, saying what to do (see store.ErrOtherFormat).
func openStore(ctx context.Context, cfg *Config, logger *slog.Logger) (*store.Store, error) {
	st, err := store.OpenWith(ctx, cfg.Store, cfg.DataDir, logger)
	if errors.Is(err, kv.ErrLocked) {
		return nil, fmt.Errorf("the data dir %s is in use by another outpost process", cfg.DataDir)
	}
	return st, err
}

// serve runs outpost until ctx ends, then shuts it down (see shutdown).
// What a setting can make fail (the port, the data dir, the free space)
// fails before anything is written.
func serve(ctx context.Context, cfg *Config, stdout, stderr io.Writer) (err error) {
	logger := newLogger(stderr, slog.Level(cfg.LogLevel))
	for _, w := range unknownVariables(os.Environ()) {
		logger.Warn(w)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (--addr, OUTPOST_ADDR): %w", cfg.Addr, err)
	}
	defer ln.Close()
	if err := ensureDir(cfg.DataDir); err != nil {
		return err
	}
	limitMemory(cfg.MemoryLimit)
	if cfg.fittedTo != 0 {
		logger.Info("memory sized to the container's limit (set --memory-limit and --cache-size to choose)",
			"container_memory", cfg.fittedTo.String(), "memory_limit", cfg.MemoryLimit.String(), "cache_size", cfg.Store.CacheSize.String())
	}
	st, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() {
		cerr := st.Close()
		if cerr == nil {
			logger.Info("database closed")
		} else if err == nil {
			err = cerr
		}
	}()
	sk, err := serviceKey(cfg.SecretKey, cfg.DataDir)
	if err != nil {
		return err
	}
	pk, _ := nostr.GetPublicKey(sk)

	publicURL, warning := publicURL(cfg.PublicURL, ln.Addr())
	if warning != "" {
		logger.Warn(warning)
	}

	list := policies.NewBanList()
	m := metrics.New(outpost.Version, buildRevision())
	rl := relay.New(relay.Config{Store: st, BanList: list, Log: logger, PublicURL: publicURL, ServicePub: pk,
		OperatorPub: cfg.RelayPubKey, Name: cfg.RelayName, Description: cfg.RelayDescription, Contact: cfg.RelayContact,
		Limits: &cfg.Relay, ClientIP: httpapi.ClientIP, Observer: m})
	outbox := pub.NewOutbox(cfg.Publish.Relays, logger.With("service", "publish"))
	sink := func(ctx context.Context, ev *nostr.Event) error {
		if err := rl.Publish(ctx, ev); err != nil {
			return err
		}
		outbox.Send(ev)
		return nil
	}
	embedded, err := startEmbeddedMint(cfg)
	if err != nil {
		return err
	}
	if embedded != nil {
		defer embedded.Close() // after the services, the faucet's wallet among them, have stopped
	}
	d := deps{cfg: cfg, log: logger, store: st, relay: rl, banList: list, sink: sink, publicURL: publicURL, secretKey: sk, pubKey: pk, metrics: m,
		embedded: embedded, adminKeys: &adminKeys{}}
	if len(cfg.Publish.Relays) > 0 {
		d.publishing, d.offer = outbox.BanListChecks, outbox.Offer
	}
	components, err := wireServices(ctx, &d, component{jobs: []func(context.Context){outbox.Run}})
	if err != nil {
		return err
	}
	// The store's own part: its health (is there room to write?), the
	// relay's background work, and giving memory back after a burst of it.
	components = append(components, component{
		api: httpapi.Service{Name: "storage", Health: httpapi.ReportHealth(st.Health)},
		jobs: []func(context.Context){
			func(ctx context.Context) { st.Events.SweepExpired(ctx, expirySweep) },
			func(ctx context.Context) {
				returnIdleMemory(ctx, time.Tick(idleCheck), gcCycles, func() { releaseMemory(st, logger) })
			}},
	})
	if up := wireUpstream(d, components); up != nil {
		components = append(components, *up)
	}
	if job, err := listenMetrics(d); err != nil {
		return err
	} else if job != nil {
		components = append(components, component{jobs: []func(context.Context){job}})
	}

	srv, idx, err := newServer(d, components)
	if err != nil {
		return err
	}
	logger.Info("outpost started", "version", outpost.Version, "addr", ln.Addr().String(), "public_url", publicURL,
		"pubkey", pubkey.NPub(pk), "data_dir", cfg.DataDir)
	fmt.Fprintf(stdout, "outpost %s serving on %s (relay %s)\n", outpost.Version, publicURL, idx.Relay)
	return runUntil(ctx, srv, ln, rl, components, cfg.ShutdownTimeout, logger)
}

// wireServices wires the web of trust, then the services that ask it,
// after first.
func wireServices(ctx context.Context, d *deps, first component) ([]component, error) {
	w, wc, err := wireWot(ctx, *d)
	if err != nil {
		return nil, err
	}
	d.wot = w
	components := []component{first, *wc}
	for _, wire := range []func(context.Context, deps) (*component, error){wireBanlist, wireMintdir, wireFaucet} {
		c, err := wire(ctx, *d)
		if err != nil {
			return nil, err
		}
		components = append(components, *c)
	}
	return components, nil
}

// publicURL is the configured public URL, else the listener's. A listener
// on every interface (0.0.0.0, ::) has no address a client could use: then
// it is http://localhost:<port>, which only this machine reaches, and the
// warning says what to set.
func publicURL(configured string, addr net.Addr) (url, warning string) {
	if configured != "" {
		return configured, ""
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return "http://" + addr.String(), ""
	}
	url = fmt.Sprintf("http://localhost:%d", tcp.Port)
	return url, fmt.Sprintf("listening on every interface (%s) without a public URL: NIP-98 logins, NIP-11 and the links outpost gives out use %s, "+
		"which only this machine reaches; set --public-url (OUTPOST_PUBLIC_URL) to the URL clients use, e.g. https://outpost.example", addr, url)
}

// relayURL is the relay's websocket URL at the public URL.
func relayURL(publicURL string) string { return "ws" + strings.TrimPrefix(publicURL, "http") }

// newServer is the one HTTP server: the relay at /, each component's
// service at its mount, an index for plain HTTP clients at GET /, and the
// pages for browsers in front of them all.
func newServer(d deps, components []component) (*http.Server, index, error) {
	idx := index{Name: d.cfg.RelayName, Version: outpost.Version, PubKey: pubkey.NPub(d.pubKey),
		Relay: relayURL(d.publicURL), Services: map[string]string{}}
	var services []httpapi.Service
	for _, c := range components {
		if c.api.Name == "" {
			continue
		}
		services = append(services, c.api)
		if c.api.Routes != nil {
			idx.Services[c.api.Name] = d.publicURL + c.api.Mount
		}
	}
	limit := ratelimit.New(d.cfg.RateLimit, time.Minute, nil)
	blocked := func(ip string) bool { _, ok := d.banList.IPBlocked(ip); return ok }
	watchMetrics(d, services, limit)
	api := httpapi.New(httpapi.Config{
		Relay: d.relay, Services: services, TrustedProxies: d.cfg.TrustedProxies, Log: d.log, Index: idx, RateLimit: limit,
		BlockedIP: blocked, PassBlocked: d.relay.PassBlocked, Observe: observe(d), Metrics: mainListenerMetrics(d),
	})
	pages, err := web.New(web.Config{Log: d.log.With("service", "web"), PublicURL: d.publicURL, RelayURL: idx.Relay,
		Banlist: pageService(services, "banlist"), Faucet: pageService(services, "faucet"), Mintdir: pageService(services, "mintdir"),
		RateLimit: limit, TrustedProxies: d.cfg.TrustedProxies, BlockedIP: blocked, AllowPrivateIcons: d.cfg.Mintdir.AllowPrivate,
		BootstrapKey: d.cfg.Banlist.AdminKey != ""})
	if err != nil {
		return nil, idx, err
	}
	srv := httpapi.NewServer(pages.Handler(api), httpapi.ServerLimits{})
	srv.ConnState = d.relay.TrackConn
	srv.ErrorLog = log.New(io.Discard, "", 0)
	return srv, idx, nil
}

// index is GET / for plain HTTP clients: what this outpost serves.
type index struct {
	Name     string            `json:"name"`
	PubKey   string            `json:"pubkey"`
	Relay    string            `json:"relay"`
	Services map[string]string `json:"services"` // name → base URL
	Version  string            `json:"version"`
}

// runUntil serves srv on ln and runs the components' background jobs until
// ctx ends, then shuts down in order: stop accepting, finish requests,
// close websocket clients, stop the background jobs. The caller closes the
// database last.
func runUntil(ctx context.Context, srv *http.Server, ln net.Listener, rl *relay.Relay, components []component,
	timeout time.Duration, logger *slog.Logger) error {
	jobsCtx, stopJobs := context.WithCancel(context.Background())
	var jobs sync.WaitGroup
	for _, c := range components {
		for _, job := range c.jobs {
			jobs.Go(func() { job(jobsCtx) })
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case <-ctx.Done():
	case err := <-served:
		stopJobs()
		jobs.Wait()
		return fmt.Errorf("server stopped: %w", err)
	}
	logger.Info("shutting down")
	shCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(shCtx); err != nil {
		logger.Warn("requests still running at the shutdown timeout", "err", err)
	}
	rl.CloseClients(shCtx)
	stopJobs()
	waitCtx(shCtx, &jobs)
	return nil
}

// pageService is the service the pages call by name (none if not served).
func pageService(services []httpapi.Service, name string) web.Service {
	for _, s := range services {
		if s.Name == name {
			return web.Service{Mount: s.Mount, API: s.Routes}
		}
	}
	return web.Service{}
}

// waitCtx waits for wg, but not past ctx.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
