package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/faucetapi"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/cashu/lnurl"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/guard/netguard"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/relay"
)

// wireFaucet builds the faucet: its wallet at the configured mint, or at the
// embedded test mint (startEmbeddedMint), funded from its fake Lightning
// network.
func wireFaucet(ctx context.Context, d deps) (comp *component, err error) {
	c := d.cfg.Faucet
	log := d.log.With("service", "faucet")
	if c.Primary != "" {
		// Another node runs the faucet: no wallet here, and no /health
		// check for a service this node does not run.
		log.Info("faucet: runs on another node; /faucet answers 503 faucet_elsewhere", "faucet", c.Primary)
		return &component{api: httpapi.Service{Name: "faucet", Mount: d.cfg.FaucetMount, Routes: faucetapi.Elsewhere(c.Primary, log)}}, nil
	}
	mintURL := c.MintURL
	var test *faucet.TestMint
	if tm := d.embedded; tm != nil {
		mintURL = tm.URL
		test = &faucet.TestMint{Pay: tm.Node.PayInvoice}
		log.Info("faucet: embedded test mint", "url", tm.URL)
	}
	tr, err := treasury.New(treasury.Config{DB: d.store.DB, MintURL: mintURL, AcceptedMints: c.AcceptedMints,
		Log: log, AllowNoDLEQ: c.MintWithoutDLEQ})
	if err != nil {
		return nil, fmt.Errorf("faucet wallet: %w", err)
	}
	// Relays users name (kind 10002, 10019) are dialled through the SSRF guard.
	userDial := (&net.Dialer{Control: netguard.Control}).DialContext
	if c.NutzapAllowPriv {
		userDial = (&net.Dialer{}).DialContext
	}
	svc, err := faucet.New(faucet.Config{
		Settings: c, DB: d.store.DB, Treasury: tr, TestMint: test, Log: log, Trust: d.wot,
		LNURL: lnurl.New(lnurl.Options{AllowHTTP: c.LNURLAllowHTTP, AllowPrivate: c.LNURLAllowPriv}),
		Profiles: &profiles.Fetcher{Local: d.store.Events, Relays: profileRelays(c.ProfileRelays, d.cfg.Upstream.Relays), Timeout: 4 * time.Second,
			NetDial: userDial, Log: log},
		NIP98Window: nip98.DefaultWindow, OnClaim: d.metrics.FaucetClaim,
		SecretKey: d.secretKey, Publish: publishOwn(d.relay), RelayURL: relayURL(d.publicURL), NetDial: userDial,
	})
	if err != nil {
		tr.Close(ctx)
		return nil, err
	}
	if test != nil {
		// Funded before the first request, so a fresh "go run" can pay at once.
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := tr.CheckMint(fctx); err != nil {
			log.Warn("faucet: the embedded test mint's wallet did not load", "err", err)
		}
		svc.TopUp(fctx) // once the wallet has loaded
		cancel()
	}
	d.metrics.WatchFaucet(svc, log)
	routes := faucetapi.Routes(faucetapi.Config{Service: svc, Verifier: nip98.NewVerifier(nip98.DefaultWindow, nil, store.NewReplays(d.store.DB)),
		PublicURL: d.publicURL, Log: log, LoginPerMin: faucetLoginLimit(d.cfg)})
	return &component{
		api:     httpapi.Service{Name: "faucet", Mount: d.cfg.FaucetMount, Routes: routes, Health: httpapi.ReportHealth(svc.Health)},
		authors: svc.UserPubKeys,
		jobs: []func(context.Context){func(ctx context.Context) {
			svc.Run(ctx)
			closeWallet(tr, log) // requests are done by now; serve closes the embedded mint after this
		}, tr.Watch},
	}, nil
}

// publishOwn stores an event the service signed in outpost's relay; one it
// holds already counts as taken.
func publishOwn(rl *relay.Relay) func(context.Context, *nostr.Event) error {
	return func(ctx context.Context, ev *nostr.Event) error {
		if err := rl.Publish(ctx, ev); err != nil && !errors.Is(err, eventstore.ErrDupEvent) {
			return err
		}
		return nil
	}
}

// closeWallet closes the faucet's wallet.
func closeWallet(tr *treasury.Treasury, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Close(ctx); err != nil {
		log.Warn("faucet wallet close", "err", err)
	}
}

// startEmbeddedMint starts the faucet's test mint in <data-dir>/faucet/testmint
// (so its port, keys and invoices survive restarts and the wallet's ecash
// stays valid), unless the faucet pays from a mint of the operator's (nil).
// The faucet pays from it and the directory lists it.
func startEmbeddedMint(c *Config) (*devmint.Mint, error) {
	if c.Faucet.MintURL != "" || c.Faucet.Primary != "" {
		return nil, nil
	}
	dir := filepath.Join(c.DataDir, "faucet")
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	tm, err := devmint.Start(devmint.Options{Dir: filepath.Join(dir, "testmint"), Name: "outpost test mint",
		Description: "The faucet's embedded test mint: its Lightning network is simulated, its sats are play money."})
	if err != nil {
		return nil, fmt.Errorf("faucet: embedded test mint (set --faucet-mint-url, OUTPOST_FAUCET_MINT_URL, to use a real one): %w", err)
	}
	return tm, nil
}

// faucetLoginLimit is the faucet's per-IP login limit: --rate-limit 0
// turns off every per-IP request limit, this one too.
func faucetLoginLimit(c *Config) int {
	if c.RateLimit == 0 {
		return 0
	}
	return c.Faucet.LoginLimit
}
