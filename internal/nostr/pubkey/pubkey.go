// Package pubkey parses Nostr public keys as outpost accepts them everywhere:
// npub or 64-character hex, stored and compared as lowercase hex.
package pubkey

import (
	"encoding/hex"
	"errors"
	"strings"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// ErrInvalid is returned for anything that is not an npub or 64-hex key on the curve.
var ErrInvalid = errors.New("not a valid public key (npub or 64-character hex)")

// Parse returns the lowercase hex form of an npub or hex public key that is
// a point on the curve. Use it for anything that will be stored.
func Parse(s string) (string, error) {
	hexKey, err := ParseForLookup(s)
	if err != nil || !nostr.IsValidPublicKey(hexKey) {
		return "", ErrInvalid
	}
	return hexKey, nil
}

// ParseForLookup checks only the form (npub, or 64 hex characters), not that
// the key is on the curve, which costs a square root in the field: ten times
// the rest of a ban-status lookup. Fine for lookups, since only keys that
// passed Parse are ever stored.
func ParseForLookup(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "npub1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "npub" {
			return "", ErrInvalid
		}
		s = v.(string)
	}
	if len(s) != 64 {
		return "", ErrInvalid
	}
	s = strings.ToLower(s)
	if _, err := hex.DecodeString(s); err != nil {
		return "", ErrInvalid
	}
	return s, nil
}

// NPub returns the npub form of a hex public key ("" if it is not one).
func NPub(hexKey string) string {
	n, err := nip19.EncodePublicKey(hexKey)
	if err != nil {
		return ""
	}
	return n
}
