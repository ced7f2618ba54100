package policies

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Besides bans, a relay admin keeps (NIP-86): an allow list of authors
// (when it is not empty, only they may publish), allowed and disallowed
// event kinds, and blocked client addresses. BanList holds them with the
// bans, so one snapshot says what the relay accepts.

// MayPublish reports whether pubkey (hex) may publish: the allow list is
// empty, or it holds pubkey.
func (l *BanList) MayPublish(pubkey string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.allowed) == 0 {
		return true
	}
	_, ok := l.allowed[pubkey]
	return ok
}

// AllowListed reports whether pubkey (hex) is on the allow list.
func (l *BanList) AllowListed(pubkey string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.allowed[pubkey]
	return ok
}

// SetAllowedPubKeys replaces the allow list.
func (l *BanList) SetAllowedPubKeys(pubkeys []string) {
	m := make(map[string]struct{}, len(pubkeys))
	for _, pk := range pubkeys {
		m[pk] = struct{}{}
	}
	l.mu.Lock()
	l.allowed = m
	l.mu.Unlock()
}

// AllowPubKey adds pubkey (hex) to the allow list.
func (l *BanList) AllowPubKey(pubkey string) {
	l.mu.Lock()
	l.allowed[pubkey] = struct{}{}
	l.mu.Unlock()
}

// UnallowPubKey removes pubkey (hex) from the allow list.
func (l *BanList) UnallowPubKey(pubkey string) {
	l.mu.Lock()
	delete(l.allowed, pubkey)
	l.mu.Unlock()
}

// SetKinds replaces the kind rules: a kind is accepted unless it is
// disallowed, or some kinds are allowed and it is not one of them.
func (l *BanList) SetKinds(allowed, disallowed []int) {
	a, d := make(map[int]struct{}, len(allowed)), make(map[int]struct{}, len(disallowed))
	for _, k := range allowed {
		a[k] = struct{}{}
	}
	for _, k := range disallowed {
		d[k] = struct{}{}
	}
	l.mu.Lock()
	l.allowedKinds, l.disallowedKinds = a, d
	l.mu.Unlock()
}

// KindAccepted reports whether events of kind may be published.
func (l *BanList) KindAccepted(kind int) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if _, no := l.disallowedKinds[kind]; no {
		return false
	}
	if len(l.allowedKinds) == 0 {
		return true
	}
	_, ok := l.allowedKinds[kind]
	return ok
}

// BlockedIP is a blocked address or network.
type BlockedIP struct {
	Prefix netip.Prefix // masked; a single address is a /32 or /128
	Reason string
}

// ParseIPBlock reads an address ("203.0.113.7", "2001:db8::1") or a CIDR
// ("203.0.113.0/24") into the prefix it blocks: IPv4-mapped IPv6 as IPv4,
// host bits cleared.
func ParseIPBlock(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR", s)
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("%q is wider than the IPv4-mapped range", s)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// FormatIPBlock writes a prefix as ParseIPBlock reads it: a single address
// without its /32 or /128.
func FormatIPBlock(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// ipSet finds the block that covers an address with one map lookup per
// prefix length in use. It is never changed once built.
type ipSet struct {
	blocks map[netip.Prefix]string // → reason
	bits4  []int                   // prefix lengths of IPv4 blocks, longest first
	bits6  []int
}

func newIPSet(blocks map[netip.Prefix]string) *ipSet {
	s := &ipSet{blocks: blocks}
	for p := range blocks {
		if p.Addr().Is4() {
			s.bits4 = append(s.bits4, p.Bits())
		} else {
			s.bits6 = append(s.bits6, p.Bits())
		}
	}
	for _, bits := range []*[]int{&s.bits4, &s.bits6} {
		slices.SortFunc(*bits, func(a, b int) int { return cmp.Compare(b, a) })
		*bits = slices.Compact(*bits)
	}
	return s
}

func (s *ipSet) match(a netip.Addr) (BlockedIP, bool) {
	if s == nil || len(s.blocks) == 0 {
		return BlockedIP{}, false
	}
	a = a.Unmap()
	bits := s.bits6
	if a.Is4() {
		bits = s.bits4
	}
	for _, n := range bits {
		p, _ := a.Prefix(n)
		if reason, ok := s.blocks[p]; ok {
			return BlockedIP{Prefix: p, Reason: reason}, true
		}
	}
	return BlockedIP{}, false
}

// IPBlocked reports the block covering ip (an address as a string, as a
// client-IP function gives it). Anything that is not an address is not blocked.
func (l *BanList) IPBlocked(ip string) (BlockedIP, bool) {
	s := l.ips.Load()
	if s == nil || len(s.blocks) == 0 {
		return BlockedIP{}, false
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return BlockedIP{}, false
	}
	return s.match(a.WithZone(""))
}

// IPVersion changes whenever the blocked addresses change, so a connection
// can check its address again only then.
func (l *BanList) IPVersion() uint64 { return l.ipVersion.Load() }

// SetBlockedIPs replaces the blocked addresses.
func (l *BanList) SetBlockedIPs(blocks []BlockedIP) {
	l.changeIPs(func(m map[netip.Prefix]string) {
		clear(m)
		for _, b := range blocks {
			m[b.Prefix.Masked()] = b.Reason
		}
	})
}

// BlockIP adds or replaces a block.
func (l *BanList) BlockIP(b BlockedIP) {
	l.changeIPs(func(m map[netip.Prefix]string) { m[b.Prefix.Masked()] = b.Reason })
}

// UnblockIP removes the block of exactly this prefix.
func (l *BanList) UnblockIP(p netip.Prefix) {
	l.changeIPs(func(m map[netip.Prefix]string) { delete(m, p.Masked()) })
}

func (l *BanList) changeIPs(change func(map[netip.Prefix]string)) {
	l.ipMu.Lock()
	m := map[netip.Prefix]string{}
	if s := l.ips.Load(); s != nil {
		for p, r := range s.blocks {
			m[p] = r
		}
	}
	change(m)
	l.ips.Store(newIPSet(m))
	l.ipVersion.Add(1)
	watchers := l.ipWatchers
	l.ipMu.Unlock()
	for _, f := range watchers {
		f()
	}
}

// WatchIPs calls f after every change of the blocked addresses: a relay
// drops the open connections a new block covers.
func (l *BanList) WatchIPs(f func()) {
	l.ipMu.Lock()
	l.ipWatchers = append(l.ipWatchers, f)
	l.ipMu.Unlock()
}
