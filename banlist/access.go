package banlist

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/policies"
)

// Access lists (NIP-86): the allow list of authors, kind rules and blocked
// addresses. Each is enforced by the relay from the snapshot at once.

// AllowedPubKey is a key on the allow list: while the list is not empty,
// only its keys may publish.
type AllowedPubKey struct {
	PubKey  string `json:"pubkey"` // hex
	Reason  string `json:"reason"`
	AddedAt int64  `json:"added_at"`
	AddedBy string `json:"added_by"`
}

func allowedPubKeyKey(pk string) []byte {
	raw, _ := hex.DecodeString(pk)
	return kv.Key(kv.PrefixBanlist, kindAllowedPubKey, raw)
}

// validNote checks an optional reason.
func validNote(reason string) error {
	if len([]rune(reason)) > MaxReasonLen {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "reason is longer than %d characters", MaxReasonLen).With("field", "reason")
	}
	return nil
}

// AllowPubKey puts pk (hex) on the allow list and lifts its active ban, if
// any (NIP-86 allowpubkey).
func (s *Service) AllowPubKey(ctx context.Context, actor, pk, reason string) (AllowedPubKey, error) {
	if err := validNote(reason); err != nil {
		return AllowedPubKey{}, err
	}
	now := s.now().Unix()
	a := AllowedPubKey{PubKey: pk, Reason: reason, AddedAt: now, AddedBy: actor}
	var lifted bool
	err := s.update(func(txn *kv.Txn) error {
		var err error
		if _, lifted, err = s.liftBan(txn, actor, pk, now); err != nil {
			return err
		}
		_, err = setRecord(s, txn, actor, "pubkey.allow", pk, allowedPubKeyKey(pk), a)
		return err
	}, func() {
		s.list.AllowPubKey(pk)
		if lifted {
			s.list.Unban(pk)
		}
	})
	return a, err
}

// UnallowPubKey takes pk (hex) off the allow list.
func (s *Service) UnallowPubKey(ctx context.Context, actor, pk string) (AllowedPubKey, error) {
	var a AllowedPubKey
	err := s.update(func(txn *kv.Txn) (err error) {
		a, _, err = removeRecord[AllowedPubKey](s, txn, actor, "pubkey.unallow", pk, allowedPubKeyKey(pk),
			outpost.Errorf(outpost.NotFound, "pubkey_not_allowed", "this public key is not on the allow list"))
		return err
	}, func() { s.list.UnallowPubKey(pk) })
	return a, err
}

// AllowedPubKeys lists the allow list.
func (s *Service) AllowedPubKeys(ctx context.Context) ([]AllowedPubKey, error) {
	return listRecords[AllowedPubKey](ctx, s.db, kindAllowedPubKey)
}

// Kind rules.
const (
	KindAllowed    = "allowed"
	KindDisallowed = "disallowed"
)

// KindRule says a kind is allowed (while any kind is allowed, only allowed
// kinds are accepted) or disallowed (never accepted).
type KindRule struct {
	Kind  int    `json:"kind"`
	Rule  string `json:"rule"` // KindAllowed or KindDisallowed
	SetAt int64  `json:"set_at"`
	SetBy string `json:"set_by"`
}

func kindRuleKey(kind int) []byte {
	return kv.Key(kv.PrefixBanlist, kindKindRule, binary.BigEndian.AppendUint16(nil, uint16(kind)))
}

func validKind(kind int) error {
	if kind < 0 || kind > 65535 {
		return outpost.Errorf(outpost.Invalid, "invalid_kind", "kind must be from 0 to 65535").With("field", "kind")
	}
	return nil
}

// AllowKind puts kind on the allowed list, off the disallowed one.
func (s *Service) AllowKind(ctx context.Context, actor string, kind int) (KindRule, error) {
	return s.setKind(actor, kind, KindAllowed, "kind.allow")
}

// DisallowKind puts kind on the disallowed list, off the allowed one.
func (s *Service) DisallowKind(ctx context.Context, actor string, kind int) (KindRule, error) {
	return s.setKind(actor, kind, KindDisallowed, "kind.disallow")
}

func (s *Service) setKind(actor string, kind int, rule, action string) (KindRule, error) {
	if err := validKind(kind); err != nil {
		return KindRule{}, err
	}
	r := KindRule{Kind: kind, Rule: rule, SetAt: s.now().Unix(), SetBy: actor}
	err := s.update(func(txn *kv.Txn) error {
		var old KindRule
		if found, err := kv.GetJSON(txn, kindRuleKey(kind), &old); err != nil || (found && old.Rule == rule) {
			r = old // already so: nothing to write or audit
			return err
		}
		_, err := setRecord(s, txn, actor, action, kindTarget(kind), kindRuleKey(kind), r)
		return err
	}, s.applyKinds)
	return r, err
}

// ClearKind removes kind's rule: it is treated like any kind without one.
func (s *Service) ClearKind(ctx context.Context, actor string, kind int) (KindRule, error) {
	if err := validKind(kind); err != nil {
		return KindRule{}, err
	}
	var r KindRule
	err := s.update(func(txn *kv.Txn) (err error) {
		r, _, err = removeRecord[KindRule](s, txn, actor, "kind.clear", kindTarget(kind), kindRuleKey(kind),
			outpost.Errorf(outpost.NotFound, "kind_not_listed", "kind %d is neither allowed nor disallowed", kind))
		return err
	}, s.applyKinds)
	return r, err
}

func kindTarget(kind int) string { return "kind " + strconv.Itoa(kind) }

// KindRules lists the kind rules, by kind.
func (s *Service) KindRules(ctx context.Context) ([]KindRule, error) {
	return listRecords[KindRule](ctx, s.db, kindKindRule)
}

// applyKinds loads the kind rules into the snapshot.
func (s *Service) applyKinds() {
	rules, err := s.KindRules(context.Background())
	if err != nil {
		s.log.Error("ban list: reading kind rules", "err", err)
		return
	}
	allowed, disallowed := splitKinds(rules)
	s.list.SetKinds(allowed, disallowed)
}

func splitKinds(rules []KindRule) (allowed, disallowed []int) {
	allowed, disallowed = []int{}, []int{}
	for _, r := range rules {
		if r.Rule == KindAllowed {
			allowed = append(allowed, r.Kind)
		} else {
			disallowed = append(disallowed, r.Kind)
		}
	}
	return allowed, disallowed
}

// BlockedIP is a blocked address or network (CIDR).
type BlockedIP struct {
	IP        string `json:"ip"` // "203.0.113.7" or "203.0.113.0/24"
	Reason    string `json:"reason"`
	BlockedAt int64  `json:"blocked_at"`
	BlockedBy string `json:"blocked_by"`
}

func (b BlockedIP) policy() policies.BlockedIP {
	p, _ := policies.ParseIPBlock(b.IP)
	return policies.BlockedIP{Prefix: p, Reason: b.Reason}
}

func blockedIPKey(ip string) []byte { return kv.Key(kv.PrefixBanlist, kindBlockedIP, []byte(ip)) }

// parseIP reads an address or CIDR in its one spelling.
func parseIP(ip string) (string, error) {
	p, err := policies.ParseIPBlock(ip)
	if err != nil {
		return "", outpost.Errorf(outpost.Invalid, "invalid_ip", "ip must be an IPv4 or IPv6 address or a CIDR such as 203.0.113.0/24").With("field", "ip")
	}
	return policies.FormatIPBlock(p), nil
}

// A block wider than these prefix lengths is a wide block: it needs an
// explicit confirmation, and over REST an admin key. One slip (a /0 for a
// /32) would otherwise shut out everyone, the moderators themselves too.
const (
	WideIPv4Bits = 16
	WideIPv6Bits = 32
)

// WideBlock reports whether ip (an address or CIDR) is a wide block; false
// for what is not an address.
func WideBlock(ip string) bool {
	p, err := policies.ParseIPBlock(ip)
	if err != nil {
		return false
	}
	if p.Addr().Is4() {
		return p.Bits() < WideIPv4Bits
	}
	return p.Bits() < WideIPv6Bits
}

// BlockIP blocks an address or a network: its clients cannot connect to the
// relay or call the REST services, and open connections from it are dropped.
// A wide block (WideBlock) is refused unless confirmWide.
func (s *Service) BlockIP(ctx context.Context, actor, ip, reason string, confirmWide bool) (BlockedIP, error) {
	ip, err := parseIP(ip)
	if err != nil {
		return BlockedIP{}, err
	}
	if err := validNote(reason); err != nil {
		return BlockedIP{}, err
	}
	if WideBlock(ip) && !confirmWide {
		return BlockedIP{}, outpost.Errorf(outpost.Invalid, "confirmation_required",
			"%s is wider than a /%d (IPv4) or /%d (IPv6) and may lock out many clients, admins included; confirm it to block it",
			ip, WideIPv4Bits, WideIPv6Bits).With("field", "confirm_wide").With("ip", ip)
	}
	b := BlockedIP{IP: ip, Reason: reason, BlockedAt: s.now().Unix(), BlockedBy: actor}
	err = s.update(func(txn *kv.Txn) error {
		_, err := setRecord(s, txn, actor, "ip.block", ip, blockedIPKey(ip), b)
		return err
	}, func() { s.list.BlockIP(b.policy()) })
	return b, err
}

// UnblockIP lifts the block of exactly this address or network.
func (s *Service) UnblockIP(ctx context.Context, actor, ip string) (BlockedIP, error) {
	ip, err := parseIP(ip)
	if err != nil {
		return BlockedIP{}, err
	}
	var b BlockedIP
	err = s.update(func(txn *kv.Txn) (err error) {
		b, _, err = removeRecord[BlockedIP](s, txn, actor, "ip.unblock", ip, blockedIPKey(ip),
			outpost.Errorf(outpost.NotFound, "ip_not_blocked", "%s is not blocked", ip).With("ip", ip))
		return err
	}, func() { s.list.UnblockIP(b.policy().Prefix) })
	return b, err
}

// BlockedIPs lists the blocked addresses and networks.
func (s *Service) BlockedIPs(ctx context.Context) ([]BlockedIP, error) {
	out, err := listRecords[BlockedIP](ctx, s.db, kindBlockedIP)
	slices.SortFunc(out, func(a, b BlockedIP) int { return strings.Compare(a.IP, b.IP) })
	return out, err
}
