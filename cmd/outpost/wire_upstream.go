package main

import (
	"context"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
)

// wireUpstream follows OUTPOST_UPSTREAM_RELAYS and OUTPOST_UPSTREAM_PEERS
// (nil without any): their
// events go through the relay's own checks into the store, the profiles
// followed are those the components read, and each relay's state is part of
// /health (as "upstream").
func wireUpstream(d deps, components []component) *component {
	if len(d.cfg.Upstream.Relays)+len(d.cfg.Upstream.Peers) == 0 {
		return nil
	}
	var authors []func(context.Context) []string
	var follow []nostr.Filter
	for _, c := range components {
		if c.authors != nil {
			authors = append(authors, c.authors)
		}
		follow = append(follow, c.follow...)
	}
	s := upstream.New(upstream.Config{Settings: d.cfg.Upstream, Events: d.store.Events, Ingest: d.relay.Ingest, Follow: follow,
		Log: d.log.With("service", "upstream"), Authors: func(ctx context.Context) []string {
			var all []string
			for _, f := range authors {
				all = append(all, f(ctx)...)
			}
			return all
		}})
	return &component{
		api:  httpapi.Service{Name: "upstream", Health: httpapi.ReportHealth(s.Health)},
		jobs: []func(context.Context){s.Run},
	}
}

// profileRelays are the relays the faucet asks for a user's profile at
// login: its own setting and the upstream relays, each once.
func profileRelays(faucetRelays, upstreamRelays []string) []string {
	out := slices.Clone(faucetRelays)
	for _, r := range upstreamRelays {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
