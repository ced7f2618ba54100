// Package netguard keeps outbound connections to user-supplied addresses on
// the public internet (an SSRF guard): a mint submitted to the directory, a
// Lightning address in a profile, a callback URL a Lightning-address server
// names. Whoever supplies the address must not make outpost call into its
// own host or network, nor into the cloud's metadata service. The mint
// prober and the Lightning-address client use it; the profile fetcher dials
// only relays the operator configured, so it needs none.
//
// The guard has two halves. Control runs inside every dial, after DNS
// resolution, on the address actually dialled, so a name that resolves to a
// public address when it is submitted and to a private one later (DNS
// rebinding), or a redirect to a private host, is still refused. CheckHost
// refuses a host up front, so a bad submission fails with a clear answer
// instead of failing every later check.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrBlocked is the error of a host that is, or resolves to, an address
// outside the public internet.
var ErrBlocked = errors.New("address not allowed")

// nonPublic are ranges net/netip has no predicate for but that never hold a
// public service (from IANA's special-purpose address registries).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT: the provider's, or the host's own network
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking, often internal
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and the broadcast address
	// IPv6 outside 2000::/3 (global unicast) is refused whole: that takes
	// ::/96 (IPv4-compatible), ::ffff:0:0/96 (IPv4-translated), 64:ff9b::/96
	// and 64:ff9b:1::/48 (NAT64, which reaches any IPv4 address, private
	// ones too), 100::/64 (discard), fc00::/7, fe80::/10, fec0::/10, ff00::/8.
	// Inside it:
	netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments: Teredo 2001::/32 (an IPv4 address, obfuscated), benchmarking, ORCHID
	netip.MustParsePrefix("2001:db8::/32"), // documentation
	netip.MustParsePrefix("3fff::/20"),     // documentation
}

var (
	globalUnicast = netip.MustParsePrefix("2000::/3")
	sixToFour     = netip.MustParsePrefix("2002::/16") // 6to4: an IPv4 address in bits 16–47
)

// Public reports whether ip is a public unicast address: not loopback,
// private, link-local, multicast, unspecified, nor in the ranges above, in
// any form (an IPv4-mapped IPv6 address is judged as the IPv4 address, a
// 6to4 one by the IPv4 address it embeds).
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	if ip.Is6() {
		if !globalUnicast.Contains(ip) {
			return false
		}
		if sixToFour.Contains(ip) {
			b := ip.As16()
			return Public(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Control is a net.Dialer Control function that refuses to connect to an
// address that is not Public; the error wraps ErrBlocked.
func Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlocked, address)
	}
	if !Public(ap.Addr()) {
		return fmt.Errorf("%w: %s is not a public address", ErrBlocked, ap.Addr().Unmap())
	}
	return nil
}

// ControlExcept is Control but for the exact addresses ("127.0.0.1:3338")
// given: services outpost runs itself on this host, such as the faucet's
// embedded test mint, which its own directory lists. Nothing else on the
// host, not even another port, is let through.
func ControlExcept(addrs ...string) func(network, address string, c syscall.RawConn) error {
	allowed := map[netip.AddrPort]bool{}
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			allowed[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
		}
	}
	return func(network, address string, c syscall.RawConn) error {
		if ap, err := netip.ParseAddrPort(address); err == nil && allowed[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] {
			return nil
		}
		return Control(network, address, c)
	}
}

// CheckHost resolves host and refuses it (with ErrBlocked) when any of its
// addresses is not Public, unless allowPrivate. A host that does not resolve
// is an error either way.
func CheckHost(ctx context.Context, resolver *net.Resolver, host string, allowPrivate bool) error {
	_, err := Resolve(ctx, resolver, host, allowPrivate)
	return err
}

// Resolve is CheckHost returning the addresses: host's own when it is an IP
// address, else what it resolves to. A proxied dial asks the proxy for one
// of them, so the proxy never resolves a name to an address not judged here.
func Resolve(ctx context.Context, resolver *net.Resolver, host string, allowPrivate bool) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && !Public(ip) {
			return nil, fmt.Errorf("%w: %s is not a public address", ErrBlocked, ip.Unmap())
		}
		return []netip.Addr{ip.Unmap()}, nil
	}
	if Onion(host) {
		return nil, fmt.Errorf("%w: %s is an onion service, reached only through a proxy", ErrBlocked, host)
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	for i, ip := range addrs {
		if !allowPrivate && !Public(ip) {
			return nil, fmt.Errorf("%w: %s resolves to %s", ErrBlocked, host, ip.Unmap())
		}
		addrs[i] = ip.Unmap()
	}
	return addrs, nil
}

// Onion reports whether host is in .onion (RFC 7686): a Tor onion service,
// which no resolver may look up and only a proxy (Tor's SOCKS port) reaches.
func Onion(host string) bool {
	return strings.HasSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), ".onion")
}

// CheckOnion is the rule for a name a proxy resolves itself, which the guard
// cannot judge by address: only a well-formed onion service name (v3: 56
// base32 characters; v2: 16), optionally under a subdomain, is let through,
// so the proxy is never asked for "localhost" or a name of its own network.
func CheckOnion(host string) error {
	labels := strings.Split(strings.ToLower(strings.TrimSuffix(host, ".")), ".")
	if len(labels) < 2 || labels[len(labels)-1] != "onion" {
		return fmt.Errorf("%w: %s is not an onion service name", ErrBlocked, host)
	}
	id := labels[len(labels)-2]
	if len(id) != 56 && len(id) != 16 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return fmt.Errorf("%w: %s is not a valid onion service name", ErrBlocked, host)
	}
	return nil
}
