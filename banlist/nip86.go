package banlist

import (
	"context"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr/nip86"
	"github.com/outpost-relay/outpost/internal/storage/kv"
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
	return errOf(m.s.Ban(ctx, actor, pubkey, reason, nil))
}

func (m Management) UnbanPubKey(ctx context.Context, actor, pubkey string) error {
	return errOf(m.s.Unban(ctx, actor, pubkey))
}

// ListBannedPubKeys reads the active bans a page at a time, in order of key.
func (m Management) ListBannedPubKeys(ctx context.Context, each func(nip86.PubKeyReason) error) error {
	for after := ""; ; {
		bans, next, err := m.s.ActivePage(ctx, after, nip86Page)
		if err != nil {
			return err
		}
		for _, b := range bans {
			if err := each(nip86.PubKeyReason{PubKey: b.PubKey, Reason: b.Reason}); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// nip86Page is how many bans listbannedpubkeys reads at a time.
const nip86Page = 1000

func (m Management) AllowPubKey(ctx context.Context, actor, pubkey, reason string) error {
	return errOf(m.s.AllowPubKey(ctx, actor, pubkey, reason))
}

func (m Management) UnallowPubKey(ctx context.Context, actor, pubkey string) error {
	return errOf(m.s.UnallowPubKey(ctx, actor, pubkey))
}

func (m Management) ListAllowedPubKeys(ctx context.Context) ([]nip86.PubKeyReason, error) {
	return each(func(k AllowedPubKey) nip86.PubKeyReason {
		return nip86.PubKeyReason{PubKey: k.PubKey, Reason: k.Reason}
	})(m.s.AllowedPubKeys(ctx))
}

func (m Management) BanEvent(ctx context.Context, actor, id, reason string) error {
	return errOf(m.s.BanEvent(ctx, actor, id, reason))
}

func (m Management) UnbanEvent(ctx context.Context, actor, id string) error {
	return errOf(m.s.UnbanEvent(ctx, actor, id))
}

func (m Management) AllowEvent(ctx context.Context, actor, id, reason string) error {
	return errOf(m.s.AllowEvent(ctx, actor, id, reason))
}

func (m Management) UnallowEvent(ctx context.Context, actor, id string) error {
	return errOf(m.s.UnallowEvent(ctx, actor, id))
}

func (m Management) ListBannedEvents(ctx context.Context) ([]nip86.IDReason, error) {
	return each(func(e BannedEvent) nip86.IDReason {
		return nip86.IDReason{ID: e.ID, Reason: e.Reason}
	})(m.s.BannedEvents(ctx))
}

func (m Management) ListAllowedEvents(ctx context.Context) ([]nip86.IDReason, error) {
	return each(func(e AllowedEvent) nip86.IDReason {
		return nip86.IDReason{ID: e.ID, Reason: e.Reason}
	})(m.s.AllowedEvents(ctx))
}

// ListEventsNeedingModeration gives each reported event's reasons, and how
// many reports name it when more than one does.
func (m Management) ListEventsNeedingModeration(ctx context.Context) ([]nip86.IDReason, error) {
	return each(func(e ReportedEvent) nip86.IDReason {
		reason := strings.Join(e.Reasons, ", ")
		if e.Reports > 1 {
			reason += " (" + strconv.Itoa(e.Reports) + " reports)"
		}
		return nip86.IDReason{ID: e.ID, Reason: reason}
	})(m.s.EventsNeedingModeration(ctx))
}

func (m Management) AllowKind(ctx context.Context, actor string, kind int) error {
	return errOf(m.s.AllowKind(ctx, actor, kind))
}

func (m Management) DisallowKind(ctx context.Context, actor string, kind int) error {
	return errOf(m.s.DisallowKind(ctx, actor, kind))
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
	return errOf(m.s.BlockIP(ctx, actor, ip, reason, confirmWide))
}

func (m Management) UnblockIP(ctx context.Context, actor, ip string) error {
	return errOf(m.s.UnblockIP(ctx, actor, ip))
}

func (m Management) ListBlockedIPs(ctx context.Context) ([]nip86.IPReason, error) {
	return each(func(b BlockedIP) nip86.IPReason {
		return nip86.IPReason{IP: b.IP, Reason: b.Reason}
	})(m.s.BlockedIPs(ctx))
}

// Audit writes an audit entry for a change the relay makes itself (its
// NIP-11 name, description, icon) in the transaction that makes it.
func (m Management) Audit(txn *kv.Txn, actor, action, target string, before, after any) error {
	return m.s.audit(txn, actor, action, target, before, after)
}

// errOf keeps a service call's error: a NIP-86 method answers only whether
// it worked.
func errOf[T any](_ T, err error) error { return err }

// each maps a service listing to its NIP-86 form with f, passing its error
// on: each(f)(m.s.Listing(ctx)).
func each[T, U any](f func(T) U) func([]T, error) ([]U, error) {
	return func(xs []T, err error) ([]U, error) {
		out := make([]U, len(xs))
		for i, x := range xs {
			out[i] = f(x)
		}
		return out, err
	}
}
