package main

import (
	"context"

	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/mintdirapi"
	"github.com/outpost-relay/outpost/mintdir"
)

// wireMintdir wires the mint directory: the catalogue and its prober on the
// shared store, the relay hooks that take in NIP-87 reviews and mint
// announcements, and the REST API.
func wireMintdir(ctx context.Context, d deps) (*component, error) {
	log := d.log.With("service", "mintdir")
	dir := mintdir.New(mintdir.Config{Settings: d.cfg.Mintdir, DB: d.store.DB, Events: d.store.Events, Log: log,
		OnCheck: d.metrics.MintCheck})
	d.metrics.WatchMintdir(dir, log)
	d.relay.RejectEvent = append(d.relay.RejectEvent, mintdir.RejectInvalidNIP87)
	d.relay.OnEventSaved = append(d.relay.OnEventSaved, dir.OnEventSaved)
	d.relay.Info.AddSupportedNIP(87)
	api := mintdirapi.Config{Settings: d.cfg.MintdirAPI, Directory: dir, Log: log}
	return &component{
		api:  httpapi.Service{Name: "mintdir", Mount: d.cfg.MintdirMount, Routes: mintdirapi.Routes(api), Health: httpapi.ReportHealth(dir.Health)},
		jobs: []func(context.Context){dir.Run},
	}, nil
}
