package main

import (
	"context"
	"log/slog"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/wotapi"
	"github.com/outpost-relay/outpost/internal/nostr/contacts"
	"github.com/outpost-relay/outpost/internal/wot"
	"github.com/outpost-relay/outpost/policies"
)

// wireWot builds the web of trust on the store before the services that ask
// it: the lists it kept, or on a first start the contact lists the relay
// holds; then every event the relay saves tells it when its author was
// first seen, and every contact list updates the graph. Without seeds of
// its own it grows from the admins' keys.
func wireWot(ctx context.Context, d deps) (*wot.WoT, *component, error) {
	log := d.log.With("service", "wot")
	cfg := d.cfg.Wot
	if len(cfg.Seeds) == 0 {
		cfg.Seeds = d.cfg.AdminPubKeys
	}
	w, err := wot.New(wot.Config{Settings: cfg, DB: d.store.DB, Events: d.store.Events, Log: log})
	if err != nil {
		return nil, nil, err
	}
	if err := w.Load(ctx); err != nil {
		return nil, nil, err
	}
	if w.Lists() == 0 {
		n, err := w.ImportStored(ctx, d.store.Events)
		if err != nil {
			return nil, nil, err
		}
		log.Info("wot: contact lists taken from the relay's store", "lists", n)
	}
	d.relay.OnEventSaved = append(d.relay.OnEventSaved, func(ctx context.Context, ev *nostr.Event) {
		k, err := wot.ParseKey(ev.PubKey)
		if err != nil {
			return
		}
		if err := w.Seen(k); err != nil {
			log.Warn("wot: first-seen time not stored", "pubkey", ev.PubKey, "err", err)
		}
		if ev.Kind != nostr.KindFollowList {
			return
		}
		if err := w.Apply(ev); err != nil {
			log.Warn("wot: contact list not applied", "event", ev.ID, "err", err)
		}
	})
	restrictWrites(d, w, log)
	jobs := []func(context.Context){w.Run}
	if cfg.Publish && w.Enabled() {
		jobs = append(jobs, (&wot.Publisher{WoT: w, SecretKey: d.secretKey, Sink: d.sink, Pause: cfg.PublishPause, Log: log}).Run)
	}
	if f := fetchLists(d, w, log); f != nil {
		jobs = append(jobs, f.Run)
	}
	return w, &component{
		api:  httpapi.Service{Name: "wot", Mount: d.cfg.WotMount, Routes: wotapi.Routes(wotapi.Config{WoT: w, Log: log}), Health: httpapi.ReportHealth(wotapi.Health(w))},
		jobs: jobs,
	}, nil
}

// fetchLists fetches the contact lists of the keys the web of trust walks
// through from --wot-relays (by default the upstream and profile relays),
// hop by hop: each list taken in that reaches new keys asks for theirs. Nil
// without seeds or relays.
func fetchLists(d deps, w *wot.WoT, log *slog.Logger) *contacts.Fetcher {
	cfg := d.cfg.WotRelays
	if len(cfg.Relays) == 0 {
		cfg.Relays = profileRelays(d.cfg.Faucet.ProfileRelays, d.cfg.Upstream.Relays)
	}
	if !w.Enabled() || len(cfg.Relays) == 0 {
		return nil
	}
	f := contacts.New(contacts.Config{Settings: cfg, Authors: w.Walked, Ingest: d.relay.Ingest, Log: log})
	w.OnWalked(f.Changed)
	return f
}

// restrictWrites adds the relay's write policy of --relay-write wot: only
// members publish, but for the open kinds and the admins.
func restrictWrites(d deps, w *wot.WoT, log *slog.Logger) {
	if d.cfg.RelayWrite.Write != policies.WriteWoT {
		return
	}
	if !w.Enabled() {
		log.Warn("--relay-write wot without seeds (--wot-seeds, --admin-pubkeys): every key may publish, as with all")
		return
	}
	open, _ := d.cfg.RelayWrite.Kinds() // checked by Valid
	member := func(pk string) bool { return w.StandingOf(pk).Member }
	d.relay.RejectEvent = append(d.relay.RejectEvent, policies.RestrictToMembers(member, open, d.cfg.AdminPubKeys))
}
