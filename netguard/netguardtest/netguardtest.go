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
}

// Public holds public addresses the guard lets through.
var Public = []string{"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.128.0.1", "198.20.0.1", "2606:4700::1111", "2001:4860:4860::8888"}

// URLHost is addr as the host part of a URL: IPv6 addresses in brackets.
func URLHost(addr string) string {
	if strings.Contains(addr, ":") {
		return "[" + addr + "]"
	}
	return addr
}

// HostPort is addr with a port, as a dialer sees it.
func HostPort(addr, port string) string { return net.JoinHostPort(addr, port) }
