//go:build nobanpolicy

package relay

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/policies"
)

// banPolicies is empty in the benchmarks' baseline build: the same relay
// with no ban policy. Never ship a build with this tag.
func banPolicies(*policies.BanList) []func(context.Context, *nostr.Event) (bool, string) {
	return nil
}
