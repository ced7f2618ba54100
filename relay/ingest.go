package relay

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip70"
)

// Ingest takes in an event that did not come from a client of ours (another
// relay sent it: package upstream) through the same checks as one published
// here, except the per-client rate limits: form and sizes, id and signature,
// every RejectEvent policy (the ban list, NIP-87 validation, deletions), then
// the store, NIP-09 and the broadcast. Protected events (NIP-70) are refused:
// their author never asked us to hold them. ok and reason are what an OK
// message would say ("duplicate: ..." for an event already held).
func (r *Relay) Ingest(ctx context.Context, ev *nostr.Event) (ok bool, reason string) {
	if reason := r.limits.checkEvent(ev); reason != "" {
		return false, reason
	}
	if !r.verifySignature(ev) {
		return false, "invalid: the signature does not verify"
	}
	switch {
	case ev.Kind == nostr.KindClientAuthentication:
		return false, "invalid: kind-22242 events are never stored"
	case nip70.IsProtected(*ev):
		return false, "restricted: a protected event (NIP-70) is only accepted from its author"
	case nip70.HasEmbeddedProtected(*ev):
		return false, "blocked: reposts of protected events (NIP-70) are not accepted"
	}
	return r.add(ctx, nil, ev)
}
