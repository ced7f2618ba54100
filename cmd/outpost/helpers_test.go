package main

import (
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/relay/relaytest"
)

// connect opens a go-nostr client to the instance (see relaytest for why
// through a proxy that the instance freezes before it shuts down).
func connect(t *testing.T, inst *instance) *nostr.Relay {
	t.Helper()
	r, p := relaytest.Dial(t, inst.url)
	inst.proxies = append(inst.proxies, p)
	return r
}

func query(t *testing.T, r *nostr.Relay, f nostr.Filter) []*nostr.Event {
	t.Helper()
	return relaytest.Query(t, r, f)
}
