package banlist

import (
	"context"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr/nip86"
	"github.com/outpost-relay/outpost/kv"
)

// Management is the ban list as NIP-86 relay management sees it (the
// relay's Moderation): each method is the NIP-86 method of its name, done
// through the service, so it is audited and enforced at once. actor names
// the admin in the audit log.
type Management struct{ s *Service }

// Management returns the service's NIP-86 face.
func (s *Service) Management() Management { return Management{s} }

// nip86Ban is the reason of a banpubkey without one: bans need a reason.
const nip86Ban = "banned by a relay admin"

func (m Management) BanPubKey(ctx context.Context, actor, pubkey, reason string) error {
	if strings.TrimSpace(reason) == "" {
		reason = nip86Ban
	}
	_, err := m.s.Ban(ctx, actor, pubkey, reason, nil)
	return err
}

func (m Management) UnbanPubKey(ctx context.Context, actor, pubkey string) error {
	_, err := m.s.Unban(ctx, actor, pubkey)
	return err
}

func (m Management) ListBannedPubKeys(context.Context) ([]nip86.PubKeyReason, error) {
	bans := m.s.ActiveBans()
	out := make([]nip86.PubKeyReason, len(bans))
	for i, b := range bans {
		out[i] = nip86.PubKeyReason{PubKey: b.PubKey, Reason: b.Reason}
	}
	return out, nil
}

func (m Management) AllowPubKey(ctx context.Context, actor, pubkey, reason string) error {
	_, err := m.s.AllowPubKey(ctx, actor, pubkey, reason)
	return err
}

func (m Management) UnallowPubKey(ctx context.Context, actor, pubkey string) error {
	_, err := m.s.UnallowPubKey(ctx, actor, pubkey)
	return err
}

func (m Management) ListAllowedPubKeys(ctx context.Context) ([]nip86.PubKeyReason, error) {
	keys, err := m.s.AllowedPubKeys(ctx)
	out := make([]nip86.PubKeyReason, len(keys))
	for i, k := range keys {
		out[i] = nip86.PubKeyReason{PubKey: k.PubKey, Reason: k.Reason}
	}
	return out, err
}

func (m Management) BanEvent(ctx context.Context, actor, id, reason string) error {
	_, err := m.s.BanEvent(ctx, actor, id, reason)
	return err
}

func (m Management) UnbanEvent(ctx context.Context, actor, id string) error {
	_, err := m.s.UnbanEvent(ctx, actor, id)
	return err
}

func (m Management) AllowEvent(ctx context.Context, actor, id, reason string) error {
	_, err := m.s.AllowEvent(ctx, actor, id, reason)
	return err
}

func (m Management) UnallowEvent(ctx context.Context, actor, id string) error {
	_, err := m.s.UnallowEvent(ctx, actor, id)
	return err
}

func (m Management) ListBannedEvents(ctx context.Context) ([]nip86.IDReason, error) {
	evs, err := m.s.BannedEvents(ctx)
	out := make([]nip86.IDReason, len(evs))
	for i, e := range evs {
		out[i] = nip86.IDReason{ID: e.ID, Reason: e.Reason}
	}
	return out, err
}

func (m Management) ListAllowedEvents(ctx context.Context) ([]nip86.IDReason, error) {
	evs, err := m.s.AllowedEvents(ctx)
	out := make([]nip86.IDReason, len(evs))
	for i, e := range evs {
		out[i] = nip86.IDReason{ID: e.ID, Reason: e.Reason}
	}
	return out, err
}

// ListEventsNeedingModeration gives each reported event's reasons, and how
// many reports name it when more than one does.
func (m Management) ListEventsNeedingModeration(ctx context.Context) ([]nip86.IDReason, error) {
	evs, err := m.s.EventsNeedingModeration(ctx)
	out := make([]nip86.IDReason, len(evs))
	for i, e := range evs {
		reason := strings.Join(e.Reasons, ", ")
		if e.Reports > 1 {
			reason += " (" + strconv.Itoa(e.Reports) + " reports)"
		}
		out[i] = nip86.IDReason{ID: e.ID, Reason: reason}
	}
	return out, err
}

func (m Management) AllowKind(ctx context.Context, actor string, kind int) error {
	_, err := m.s.AllowKind(ctx, actor, kind)
	return err
}

func (m Management) DisallowKind(ctx context.Context, actor string, kind int) error {
	_, err := m.s.DisallowKind(ctx, actor, kind)
	return err
}

func (m Management) ListAllowedKinds(ctx context.Context) ([]int, error) {
	rules, err := m.s.KindRules(ctx)
	allowed, _ := splitKinds(rules)
	return allowed, err
}

func (m Management) ListDisallowedKinds(ctx context.Context) ([]int, error) {
	rules, err := m.s.KindRules(ctx)
	_, disallowed := splitKinds(rules)
	return disallowed, err
}

func (m Management) BlockIP(ctx context.Context, actor, ip, reason string, confirmWide bool) error {
	_, err := m.s.BlockIP(ctx, actor, ip, reason, confirmWide)
	return err
}

func (m Management) UnblockIP(ctx context.Context, actor, ip string) error {
	_, err := m.s.UnblockIP(ctx, actor, ip)
	return err
}

func (m Management) ListBlockedIPs(ctx context.Context) ([]nip86.IPReason, error) {
	ips, err := m.s.BlockedIPs(ctx)
	out := make([]nip86.IPReason, len(ips))
	for i, b := range ips {
		out[i] = nip86.IPReason{IP: b.IP, Reason: b.Reason}
	}
	return out, err
}

// Audit writes an audit entry for a change the relay makes itself (its
// NIP-11 name, description, icon) in the transaction that makes it.
func (m Management) Audit(txn *kv.Txn, actor, action, target string, before, after any) error {
	return m.s.audit(txn, actor, action, target, before, after)
}
