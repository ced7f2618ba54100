package banlist

import (
	"context"

	"github.com/nbd-wtf/go-nostr/nip86"
	"github.com/outpost-relay/outpost"
)

// The NIP-86 methods of relay management that act on the ban list (the
// relay's Moderation): through the service, so each change is audited and
// enforced at once. actor names the admin in the audit log. BanEvent and
// AllowEvent are in bans.go.

// BanPubKey bans pubkey with no end.
func (s *Service) BanPubKey(ctx context.Context, actor, pubkey, reason string) error {
	if reason == "" {
		reason = "banned by a relay admin"
	}
	_, err := s.Ban(ctx, actor, pubkey, reason, nil)
	return err
}

// AllowPubKey lifts pubkey's ban; a key with no ban is already allowed.
func (s *Service) AllowPubKey(ctx context.Context, actor, pubkey string) error {
	if _, err := s.Unban(ctx, actor, pubkey); err != nil && !outpost.IsKind(err, outpost.NotFound) {
		return err
	}
	return nil
}

// ListBannedPubKeys lists the active bans.
func (s *Service) ListBannedPubKeys(context.Context) ([]nip86.PubKeyReason, error) {
	bans := s.ActiveBans()
	out := make([]nip86.PubKeyReason, 0, len(bans))
	for _, b := range bans {
		out = append(out, nip86.PubKeyReason{PubKey: b.PubKey, Reason: b.Reason})
	}
	return out, nil
}

// ListEventsNeedingModeration lists the events of the last 1,000 reports.
func (s *Service) ListEventsNeedingModeration(ctx context.Context) ([]nip86.IDReason, error) {
	reports, err := s.Reports(ctx, 0, 1000)
	out := []nip86.IDReason{}
	for _, rep := range reports {
		for _, id := range rep.EventIDs {
			out = append(out, nip86.IDReason{ID: id, Reason: rep.Reason})
		}
	}
	return out, err
}

// ListBannedEvents lists the banned events.
func (s *Service) ListBannedEvents(ctx context.Context) ([]nip86.IDReason, error) {
	evs, err := s.BannedEvents(ctx)
	out := make([]nip86.IDReason, 0, len(evs))
	for _, e := range evs {
		out = append(out, nip86.IDReason{ID: e.ID, Reason: e.Reason})
	}
	return out, err
}
