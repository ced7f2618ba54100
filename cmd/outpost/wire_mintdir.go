package main

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/httpapi/mintdirapi"
	"github.com/outpost-relay/outpost/internal/audit"
	pub "github.com/outpost-relay/outpost/internal/nostr/publish"
	"github.com/outpost-relay/outpost/mintdir"
)

// wireMintdir wires the mint directory: the catalogue and its prober on the
// shared store, the relay hooks that take in NIP-87 reviews, mint
// announcements and the followed monitors' status events (also followed
// upstream), the REST API, and each mint's status as a signed event.
func wireMintdir(ctx context.Context, d deps) (*component, error) {
	log := d.log.With("service", "mintdir")
	var own []string
	if d.embedded != nil {
		own = []string{d.embedded.URL}
	}
	status := &pub.Mints{Events: d.store.Events, Sink: d.sink, SecretKey: d.secretKey,
		Interval: d.cfg.Mintdir.ProbeInterval, Timeout: d.cfg.Mintdir.ProbeTimeout, Log: log}
	var aud *audit.Auditor
	var audits func(string) (mintdir.AuditSummary, error)
	var dir *mintdir.Directory
	if d.cfg.Audit.Enabled { // OUTPOST_AUDIT
		trust := func(u string) (int, bool) {
			m, err := dir.GetByURL(ctx, u)
			if err != nil || m.Summary.Trust.Level == mintdir.LevelUnknown {
				return 0, false
			}
			return m.Summary.Trust.Score, true
		}
		var err error
		failed := func(u string, at time.Time, detail string) {
			if err := dir.PayoutFailed(ctx, u, at, detail); err != nil {
				log.Warn("mintdir: recording a failed payout", "mint", u, "err", err)
			}
		}
		if aud, err = audit.New(audit.Config{Settings: d.cfg.Audit, DB: d.store.DB, Log: d.log.With("service", "audit"), Trust: trust, OnFailure: failed}); err != nil {
			return nil, err
		}
		audits = func(u string) (mintdir.AuditSummary, error) {
			s, err := aud.Summary(u)
			return mintdir.AuditSummary(s), err
		}
	}
	dir = mintdir.New(mintdir.Config{Settings: d.cfg.Mintdir, DB: d.store.DB, Events: d.store.Events, Log: log,
		OnCheck: d.metrics.MintCheck, OnChange: status.Changed, Own: own, Self: d.pubKey, Weight: reviewWeight(d), Audits: audits})
	status.Directory = dir
	d.metrics.WatchMintdir(dir, log)
	d.relay.RejectEvent = append(d.relay.RejectEvent, mintdir.RejectInvalidNIP87)
	d.relay.OnEventSaved = append(d.relay.OnEventSaved, dir.OnEventSaved)
	d.relay.AddSupportedNIP(87)
	api := mintdirapi.Config{Settings: d.cfg.MintdirAPI, Directory: dir, Log: log, Follows: d.wot.FollowsOf,
		Admin: banlistapi.RequireAdmin(d.adminKeys.svc)}
	jobs := []func(context.Context){dir.Run, status.Run}
	if aud != nil {
		api.Audits = aud
		jobs = append(jobs, func(ctx context.Context) { aud.Run(ctx); aud.Close() })
	}
	var follow []nostr.Filter
	if len(d.cfg.Mintdir.Monitors) > 0 {
		follow = []nostr.Filter{{Kinds: []int{mintdir.KindMintStatus}, Authors: d.cfg.Mintdir.Monitors}}
	}
	return &component{
		follow: follow,
		api:    httpapi.Service{Name: "mintdir", Mount: d.cfg.MintdirMount, Routes: mintdirapi.Routes(api), Health: httpapi.ReportHealth(dir.Health)},
		jobs:   jobs,
	}, nil
}

// reviewWeight is a review author's say in the trust score: his weight in
// the web of trust, or without one (no seeds) everyone's in full.
func reviewWeight(d deps) func(pubkey string) float64 {
	if !d.wot.Enabled() {
		return nil
	}
	return d.wot.Weight
}
