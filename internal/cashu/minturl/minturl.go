// Package minturl gives a Cashu mint URL its one spelling, so that every
// part of outpost agrees on what "the same mint" is: the directory's
// catalogue, the faucet's own and accepted mints, and the mint a token
// names, which its wallet may have spelled any way.
package minturl

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Normalize returns the one spelling of a mint URL: http(s) only, no
// credentials, query or fragment, lower-case scheme and host, no trailing
// dot on the host, no IPv6 zone, a port from 1 to 65535 written as a plain
// number and left out when it is the default, dot segments resolved, no
// trailing slash. A path is kept: some mints live under one. What it
// returns parses back with net/url and normalises to itself.
func Normalize(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("the URL is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("the URL does not parse")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", errors.New("the URL must start with http:// or https://")
	}
	if u.User != nil {
		return "", errors.New("the URL must not carry credentials")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("the URL must not have a query or a fragment")
	}
	host, err := normalHost(u.Hostname())
	if err != nil {
		return "", err
	}
	port, err := normalPort(u.Port())
	if err != nil {
		return "", err
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	hostport := host
	switch {
	case port != "":
		hostport = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"): // an IPv6 literal
		hostport = "[" + host + "]"
	}
	return scheme + "://" + hostport + strings.TrimRight(removeDotSegments(u.EscapedPath()), "/"), nil
}

// normalHost is the host in lower case without its trailing dot; a host
// with an empty label or an IPv6 zone is refused.
func normalHost(h string) (string, error) {
	host := strings.TrimSuffix(strings.ToLower(h), ".")
	if host == "" {
		return "", errors.New("the URL has no host")
	}
	if strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return "", errors.New("the URL's host has an empty label")
	}
	if strings.Contains(host, "%") {
		// fe80::1%eth0 names an interface of whichever machine reads it.
		return "", errors.New("the URL must not have an IPv6 zone")
	}
	return host, nil
}

// normalPort is a port as a plain number from 1 to 65535 ("" when absent).
func normalPort(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", errors.New("the URL's port must be a number from 1 to 65535")
	}
	return strconv.Itoa(n), nil
}

// removeDotSegments resolves "." and ".." in an escaped absolute path (RFC
// 3986 §5.2.4), recognising them escaped too ("%2e%2E"), as a client
// fetching the URL would. Other segments keep their escapes, so an escaped
// slash stays inside its segment.
func removeDotSegments(escaped string) string {
	if escaped == "" {
		return ""
	}
	var out []string
	for _, seg := range strings.Split(escaped, "/")[1:] {
		switch dec, _ := url.PathUnescape(seg); dec {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	return "/" + strings.Join(out, "/")
}
