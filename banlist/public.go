package banlist

import (
	"strconv"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/policies"
)

// The public list as the API answers it and the console page shows it.

// BlockedPubKey is one banned key in GET /blocked/pubkeys.
type BlockedPubKey struct {
	PubKey    string `json:"pubkey"` // npub
	Reason    string `json:"reason"`
	ExpiresAt *int64 `json:"expires_at"` // unix seconds; null: for good
}

// BlockedPubKeyOf is b as the public list shows it.
func BlockedPubKeyOf(b policies.Ban) BlockedPubKey {
	return BlockedPubKey{PubKey: pubkey.NPub(b.PubKey), Reason: b.Reason, ExpiresAt: UnixOrNil(b.ExpiresAt)}
}

// BlockedPubKeys is GET /blocked/pubkeys.
type BlockedPubKeys struct {
	PubKeys []BlockedPubKey `json:"pubkeys"`
	Issuer
}

// BlockedPage is a page of GET /blocked/pubkeys (?limit, ?after).
type BlockedPage struct {
	PubKeys []BlockedPubKey `json:"pubkeys"`
	// Next is the ?after= of the next page; null on the last.
	Next *string `json:"next"`
	Issuer
}

// BlockedWords is GET /blocked/words.
type BlockedWords struct {
	Words []string `json:"words"`
	Issuer
}

// Issuer is what every answer of the public lists (whole or changes) says
// of itself: its cursor, and the identity of the server that issued it, to
// which alone the cursor means something.
type Issuer struct {
	Cursor        string `json:"cursor"`
	ServicePubKey string `json:"service_pubkey"` // hex
	Epoch         string `json:"epoch"`
}

// IssuerOf is the issuer of an answer made by s at t. Its cursor is the
// time in unix milliseconds, a dot and the epoch ("1800000042000.0c65…"),
// so that s refuses a cursor another server issued (ChangesSince) even to
// a client that does not compare identities.
func IssuerOf(s *Service, t time.Time) Issuer {
	id := s.Identity()
	return Issuer{Cursor: strconv.FormatInt(t.UnixMilli(), 10) + "." + id.Epoch, ServicePubKey: id.PubKey, Epoch: id.Epoch}
}

// UnixOrNil is a unix time, null for 0 (never).
func UnixOrNil(t int64) *int64 {
	if t == 0 {
		return nil
	}
	return &t
}
