package mintdir

import (
	"errors"
	"net/url"
	"strings"

	"github.com/outpost-relay/outpost/internal/cashu/minturl"
)

// URL types of a mint's URL list.
const (
	URLClearnet = "clearnet" // the canonical URL, the one probed
	URLTor      = "tor"      // any .onion URL
	URLMirror   = "mirror"   // every other URL the mint is known by
)

// maxURLLength keeps mint URLs, and the badger keys built from them, small.
const maxURLLength = 100

// catalogueURL is a mint URL as the directory stores and looks it up: in
// its one spelling (minturl), and short enough to index.
func catalogueURL(raw string) (string, error) {
	u, err := minturl.Normalize(raw)
	if err == nil && len(u) > maxURLLength {
		err = errors.New("the URL is too long")
	}
	return u, err
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
