// Package netguardtest lists addresses for the tests of every client that
// dials user-supplied addresses, so each proves it refuses the same ranges.
package netguardtest

import (
	"net"
	"strings"
)

// Blocked holds an address from every range netguard refuses, including the
// IPv4-mapped IPv6 spelling of IPv4 ones. Dialling them is refused before a
// connection is attempted, so tests may use them freely.
var Blocked = []string{
	"127.0.0.1", "127.1.2.3", // loopback
	"10.1.2.3", "172.16.5.4", "192.168.1.1", // private
	"169.254.169.254",    // link-local: cloud metadata services
	"0.0.0.0", "0.1.2.3", // this network
	"100.64.0.1", "100.127.255.254", // carrier-grade NAT
	"192.0.0.8",                  // IETF protocol assignments
	"198.18.0.1", "198.19.255.1", // benchmarking
	"240.0.0.1", "255.255.255.255", // reserved, broadcast
	"224.0.0.1", // multicast
	"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
	"64:ff9b::a00:1", "64:ff9b::808:808", "64:ff9b:1::1", // NAT64, whatever IPv4 address it embeds
	"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
	"::ffff:100.64.0.1", "::ffff:198.18.0.1", "::ffff:240.0.0.1",
	// IANA's IPv6 special-purpose ranges, several of which embed an IPv4 address:
	"::127.0.0.1", "::10.0.0.1", "::8.8.8.8", // IPv4-compatible ::/96 (deprecated)
	"::ffff:0:127.0.0.1", "::ffff:0:8.8.8.8", // IPv4-translated ::ffff:0:0/96
	"2002:7f00:1::", "2002:a00:1::1", "2002:a9fe:a9fe::1", "2002:6440:1::", // 6to4 of loopback, private, link-local, CGNAT
	"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo 2001::/32
	"2001:2::1",                          // benchmarking
	"100::1", "100::ffff:ffff:ffff:ffff", // discard-only 100::/64
	"2001:db8::1", "2001:db8:ffff::1", // documentation
	"3fff::1",                             // documentation (RFC 9637)
	"64:ff9b::7f00:1", "64:ff9b:1::a00:1", // NAT64 of loopback, local-use NAT64 of a private address
	"fec0::1", "5f00::1", "4000::1", "::2", // site-local (deprecated), SRv6 SIDs, unassigned, reserved
}

// Public holds public addresses the guard lets through.
var Public = []string{"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.128.0.1", "198.20.0.1", "2606:4700::1111", "2001:4860:4860::8888",
	"2002:808:808::1", // 6to4 of a public IPv4 address
	"2a00:1450:4001:80b::200e", "2400:cb00::1"}

// URLHost is addr as the host part of a URL: IPv6 addresses in brackets.
func URLHost(addr string) string {
	if strings.Contains(addr, ":") {
		return "[" + addr + "]"
	}
	return addr
}

// HostPort is addr with a port, as a dialer sees it.
func HostPort(addr, port string) string { return net.JoinHostPort(addr, port) }
