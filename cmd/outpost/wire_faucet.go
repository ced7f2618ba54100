package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/faucetapi"
	"github.com/outpost-relay/outpost/lnurl"
	"github.com/outpost-relay/outpost/nip98"
	"github.com/outpost-relay/outpost/profiles"
	"github.com/outpost-relay/outpost/testmint"
	"github.com/outpost-relay/outpost/treasury"
)

// wireFaucet builds the faucet: its wallet at the configured mint, or at an
// embedded test mint (in <data-dir>/faucet/testmint, so its port, keys and
// invoices survive restarts and the wallet's ecash stays valid) funded from
// its fake Lightning network.
func wireFaucet(ctx context.Context, d deps) (comp *component, err error) {
	c := d.cfg.Faucet
	log := d.log.With("service", "faucet")
	dir := filepath.Join(d.cfg.DataDir, "faucet")
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	mintURL := c.MintURL
	var tm *testmint.Mint
	var test *faucet.TestMint
	if mintURL == "" {
		tm, err = testmint.Start(testmint.Options{Dir: filepath.Join(dir, "testmint"), Name: "outpost test mint",
			Description: "The faucet's embedded test mint: its Lightning network is simulated, its sats are play money."})
		if err != nil {
			return nil, fmt.Errorf("faucet: embedded test mint (set --faucet-mint-url, OUTPOST_FAUCET_MINT_URL, to use a real one): %w", err)
		}
		defer func() {
			if err != nil {
				tm.Close()
			}
		}()
		mintURL = tm.URL
		test = &faucet.TestMint{Pay: tm.Node.PayInvoice, FundSats: c.TestMintFunding, FloorSats: c.MinBalanceSats + c.DailyBudgetSats}
		log.Info("faucet: embedded test mint", "url", tm.URL)
	}
	tr, err := treasury.New(treasury.Config{DB: d.store.DB, MintURL: mintURL, AcceptedMints: c.AcceptedMints,
		LegacyDir: filepath.Join(dir, "wallet"), Log: log})
	if err != nil {
		return nil, fmt.Errorf("faucet wallet: %w", err)
	}
	svc, err := faucet.New(faucet.Config{
		DB: d.store.DB, Treasury: tr, Log: log,
		LNURL:    lnurl.New(lnurl.Options{AllowHTTP: c.LNURLAllowHTTP, AllowPrivate: c.LNURLAllowPriv}),
		Profiles: &profiles.Fetcher{Local: d.store.Events, Relays: c.ProfileRelays, Timeout: 4 * time.Second, Log: log},
		Network:  c.Network, Enabled: c.Enabled, FixedSats: c.FixedSats, Buckets: c.Buckets,
		Cooldown: c.Cooldown, IPLimit: c.IPLimit, IPWindow: c.IPWindow, SitewideLimit: c.SitewideLimit, SitewideWindow: c.SitewideWindow,
		DailyBudgetSats: c.DailyBudgetSats, MinBalanceSats: c.MinBalanceSats, MaxFeeSats: c.MaxFeeSats,
		MinAccountAge: c.MinAccountAge, QuoteTTL: c.QuoteTTL, NPubLogin: c.NPubLogin, NIP98Window: nip98.DefaultWindow,
		Deposits: faucet.Deposits{Lightning: true, MinSats: c.DepositMinSats, MaxSats: c.DepositMaxSats, Ecash: true, MaxTokenSats: c.MaxTokenSats},
		TestMint: test, PollInterval: c.PollInterval,
	})
	if err != nil {
		tr.Close(ctx)
		return nil, err
	}
	if test != nil {
		// Funded before the first request, so a fresh "go run" can pay at once.
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := tr.Refresh(fctx); err != nil {
			log.Warn("faucet: the embedded test mint's wallet did not load", "err", err)
		} else if bal, _ := tr.Balance(); bal < test.FloorSats && bal < test.FundSats {
			if err := svc.Fund(fctx, test.FundSats-bal); err != nil {
				log.Warn("faucet: funding from the embedded test mint failed", "err", err)
			}
		}
		cancel()
	}
	routes := faucetapi.Routes(faucetapi.Config{Service: svc, Verifier: nip98.NewVerifier(nip98.DefaultWindow, nil),
		PublicURL: d.publicURL, Log: log})
	return &component{
		api: httpapi.Service{Name: "faucet", Mount: c.Mount, Routes: routes, Health: faucetapi.Health(svc)},
		jobs: []func(context.Context){func(ctx context.Context) {
			svc.Run(ctx)
			// Requests are done by now; close the wallet, then its mint.
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.Close(cctx); err != nil {
				log.Warn("faucet wallet close", "err", err)
			}
			if tm != nil {
				tm.Close()
			}
		}},
	}, nil
}
