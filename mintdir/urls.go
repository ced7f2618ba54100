package mintdir

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// URL types of a mint's URL list.
const (
	URLClearnet = "clearnet" // the canonical URL, the one probed
	URLTor      = "tor"      // any .onion URL
	URLMirror   = "mirror"   // every other URL the mint is known by
)

// maxURLLength keeps mint URLs, and the badger keys built from them, small.
const maxURLLength = 100

// NormalizeURL returns the one spelling of a mint URL that the directory
// stores and looks up: http(s) only, no credentials, query or fragment,
// lower-case scheme and host, no default port, no trailing slash. A path is
// kept: some mints live under one.
func NormalizeURL(raw string) (string, error) {
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
	host := strings.ToLower(u.Hostname())
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", errors.New("the URL has no host")
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	hostport := host
	if strings.Contains(host, ":") { // IPv6 literal
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport = net.JoinHostPort(host, port)
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	out := scheme + "://" + hostport + path
	if len(out) > maxURLLength {
		return "", errors.New("the URL is too long")
	}
	return out, nil
}

// IsOnion reports whether a normalised URL points at a Tor hidden service.
func IsOnion(normalized string) bool {
	u, err := url.Parse(normalized)
	return err == nil && strings.HasSuffix(u.Hostname(), ".onion")
}

// urlType classifies u within a mint whose canonical URL is canonical.
func urlType(u, canonical string) string {
	switch {
	case IsOnion(u):
		return URLTor
	case u == canonical:
		return URLClearnet
	}
	return URLMirror
}
