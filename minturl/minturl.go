// Package minturl gives a Cashu mint URL its one spelling, so that every
// part of outpost agrees on what "the same mint" is: the directory's
// catalogue, the faucet's own and accepted mints, and the mint a token
// names, which its wallet may have spelled any way.
package minturl

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// Normalize returns the one spelling of a mint URL: http(s) only, no
// credentials, query or fragment, lower-case scheme and host, no trailing
// dot on the host, no default port, no trailing slash. A path is kept:
// some mints live under one.
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
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", errors.New("the URL has no host")
	}
	port := u.Port()
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
	return scheme + "://" + hostport + strings.TrimRight(u.EscapedPath(), "/"), nil
}
