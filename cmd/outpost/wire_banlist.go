package main

import (
	"context"
	"log/slog"
	"slices"

	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	pub "github.com/outpost-relay/outpost/internal/nostr/publish"
)

// wireBanlist wires the ban list: the service on the shared store, feeding
// the snapshot the relay enforces; NIP-86 relay management through it; the
// relay hook that refuses malformed reports (NIP-56); the admin socket the
// CLI talks to (admin commands and backups); the REST API; and the list
// published as signed events.
func wireBanlist(ctx context.Context, d deps) (*component, error) {
	log := d.log.With("service", "banlist")
	epoch, err := dataEpoch(d.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	bl, err := banlist.New(banlist.Config{Settings: d.cfg.Banlist, DB: d.store.DB, Events: d.store.Events, List: d.banList,
		Publish: d.relay.Publish, SecretKey: d.secretKey, Epoch: epoch, Log: log, Publishing: d.publishing})
	if err != nil {
		return nil, err
	}
	d.adminKeys.svc = bl
	if err := d.relay.EnableManagement(bl.Management(), d.cfg.AdminPubKeys); err != nil {
		return nil, err
	}
	d.relay.RejectEvent = append(d.relay.RejectEvent, banlist.RejectInvalidReports)
	banOnReports(d, bl, log)
	d.metrics.WatchBanlist(bl)
	c := &component{api: httpapi.Service{
		Name: "banlist", Mount: d.cfg.BanlistMount, Health: httpapi.ReportHealth(bl.Health),
		Routes:      banlistapi.Routes(banlistapi.Config{Settings: d.cfg.BanlistAPI, Service: bl, Log: log, Trust: d.wot}),
		PassBlocked: banlistapi.PassBlocked(bl, d.cfg.BanlistMount),
	}}
	// The list as signed NIP-51 events, on our relay and the publish relays
	// (a followed list is the primary's to publish).
	events := &pub.BanList{List: d.banList, Events: d.store.Events, Sink: d.sink, SecretKey: d.secretKey, Log: log, Offer: d.offer,
		Mirror: bl.Following() != ""}
	c.jobs = append(c.jobs, events.Run)
	if p := bl.Following(); p != "" {
		log.Info("banlist: mirroring the primary's bans and blocked words; changes to them are made there", "primary", p)
		c.jobs = append(c.jobs, bl.Follow) // OUTPOST_BANLIST_FOLLOW
	}
	admin, err := listenAdmin(d.cfg.DataDir, bl, d.store, d.log)
	if err != nil {
		d.log.Warn("admin socket unavailable; admin commands need outpost stopped", "err", err)
		return c, nil
	}
	// Admin commands may run until the background jobs stop; the database
	// closes after them.
	c.jobs = append(c.jobs, func(ctx context.Context) { <-ctx.Done(); admin.Close() })
	return c, nil
}

// banOnReports makes the temporary bans of --wot-report-ban-min: reports
// saved by the relay, by members of the web of trust, against a key that is
// neither a seed nor an admin.
func banOnReports(d deps, bl *banlist.Service, log *slog.Logger) {
	cfg := d.cfg.ReportBan
	if cfg.MinReporters == 0 {
		return
	}
	if !d.wot.Enabled() {
		log.Warn("--wot-report-ban-min without seeds (--wot-seeds, --admin-pubkeys): no key is a member, so reports never ban")
		return
	}
	rb := &banlist.ReportBan{ReportBanSettings: cfg, Service: bl, Log: log,
		Member: func(pk string) bool { return d.wot.StandingOf(pk).Member },
		Protected: func(pk string) bool {
			return d.wot.StandingOf(pk).Hops == 0 || slices.Contains(d.cfg.AdminPubKeys, pk)
		}}
	d.relay.OnEventSaved = append(d.relay.OnEventSaved, rb.OnReport)
}
