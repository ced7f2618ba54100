package main

import (
	"context"
	"time"

	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/mintdirapi"
	"github.com/outpost-relay/outpost/mintdir"
)

// wireMintdir wires the mint directory: the catalogue and its prober on the
// shared store, the relay hooks that take in NIP-87 reviews and mint
// announcements, and the REST API.
func wireMintdir(ctx context.Context, d deps) (*component, error) {
	c := d.cfg.Mintdir
	log := d.log.With("service", "mintdir")
	dir := mintdir.New(mintdir.Config{
		DB: d.store.DB, Events: d.store.Events, Log: log,
		ProbeInterval: c.ProbeInterval, ProbeTimeout: c.ProbeTimeout, ProbeConcurrency: c.ProbeConcurrency,
		SlowRTT: time.Duration(c.ProbeSlowMs) * time.Millisecond, AllowPrivate: c.AllowPrivate,
	})
	d.relay.RejectEvent = append(d.relay.RejectEvent, mintdir.RejectInvalidNIP87)
	d.relay.OnEventSaved = append(d.relay.OnEventSaved, dir.OnEventSaved)
	d.relay.Info.AddSupportedNIP(87)
	api := mintdirapi.Config{Directory: dir, Log: log, SubmitPerHour: c.SubmitLimit}
	return &component{
		api:  httpapi.Service{Name: "mintdir", Mount: c.Mount, Routes: mintdirapi.Routes(api), Health: httpapi.ReportHealth(dir.Health)},
		jobs: []func(context.Context){dir.Run},
	}, nil
}
