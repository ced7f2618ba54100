package banlist

import (
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/pubkey"
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
	Cursor  string          `json:"cursor"`
}

// BlockedWords is GET /blocked/words.
type BlockedWords struct {
	Words  []string `json:"words"`
	Cursor string   `json:"cursor"`
}

// UnixOrNil is a unix time, null for 0 (never).
func UnixOrNil(t int64) *int64 {
	if t == 0 {
		return nil
	}
	return &t
}
