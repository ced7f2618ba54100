package relay

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/policies"
)

// banPolicies enforce the ban list and the access lists on every event.
func banPolicies(l *policies.BanList) []func(context.Context, *nostr.Event) (bool, string) {
	return []func(context.Context, *nostr.Event) (bool, string){
		policies.RejectBannedAuthors(l),
		policies.RejectUnlistedAuthors(l),
		policies.RejectDisallowedKinds(l),
		policies.RejectBannedEvents(l),
		policies.RejectBlockedWords(l),
	}
}
