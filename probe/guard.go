package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrBlockedAddress is returned when a mint's host is, or resolves to, an
// address outside the public internet and private addresses are not allowed.
var ErrBlockedAddress = errors.New("address not allowed")

// nonPublic are ranges that net/netip has no predicate for but that never
// hold a public mint.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach private IPv4
}

// PublicAddr reports whether ip is a public unicast address: not loopback,
// private, link-local, multicast, unspecified or otherwise internal.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// dialControl refuses connections to non-public addresses. It runs after DNS
// resolution, on the address actually dialled, so a host that resolves to a
// public address at submit time and to a private one later (DNS rebinding)
// is still refused.
func dialControl(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrBlockedAddress, address)
		}
		if !PublicAddr(ap.Addr()) {
			return fmt.Errorf("%w: %s is not a public address", ErrBlockedAddress, ap.Addr())
		}
		return nil
	}
}

// CheckHost resolves host and refuses it when any of its addresses is not
// public (unless allowPrivate). It is the submit-time half of the SSRF guard;
// the dial-time half is in every connection the Client makes.
func CheckHost(ctx context.Context, resolver *net.Resolver, host string, allowPrivate bool) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && !PublicAddr(ip) {
			return fmt.Errorf("%w: %s is not a public address", ErrBlockedAddress, ip)
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("resolve %s: no addresses", host)
	}
	if allowPrivate {
		return nil
	}
	for _, ip := range addrs {
		if !PublicAddr(ip) {
			return fmt.Errorf("%w: %s resolves to %s", ErrBlockedAddress, host, ip.Unmap())
		}
	}
	return nil
}
