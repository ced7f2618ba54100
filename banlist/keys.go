package banlist

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Role is an API key's permission level; each includes those below it.
type Role string

const (
	RoleViewer    Role = "viewer"    // read bans, reports and the audit log
	RoleModerator Role = "moderator" // ban, unban, blocked words
	RoleAdmin     Role = "admin"     // also manages API keys
)

var roleRank = map[Role]int{RoleViewer: 1, RoleModerator: 2, RoleAdmin: 3}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return roleRank[r] > 0 }

// Includes reports whether r grants at least need.
func (r Role) Includes(need Role) bool { return roleRank[r] >= roleRank[need] }

// keyPrefix makes outpost keys recognisable (e.g. to secret scanners).
const keyPrefix = "opk_"

// APIKey is an issued key; only its hash is stored.
type APIKey struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Role      Role    `json:"role"`
	CreatedAt int64   `json:"created_at"`
	CreatedBy string  `json:"created_by"`
	RevokedAt *int64  `json:"revoked_at"`
	RevokedBy *string `json:"revoked_by"`
}

// Actor names the key in bans and the audit log.
func (k APIKey) Actor() string { return "key:" + k.Name }

func hashKey(key string) [32]byte { return sha256.Sum256([]byte(key)) }

func apiKeyKey(hash [32]byte) []byte { return kv.Key(kv.PrefixBanlist, kindAPIKey, hash[:]) }

// CreateKey issues a key and returns it in clear text; it is not stored and
// cannot be shown again.
func (s *Service) CreateKey(ctx context.Context, actor, name string, role Role) (string, APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 64 {
		return "", APIKey{}, outpost.Errorf(outpost.Invalid, "invalid_request", "name is required (at most 64 characters)")
	}
	if !role.Valid() {
		return "", APIKey{}, outpost.Errorf(outpost.Invalid, "invalid_role", "role must be viewer, moderator or admin")
	}
	var raw [32]byte
	rand.Read(raw[:])
	secret := keyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	h := hashKey(secret)
	k := APIKey{ID: hex.EncodeToString(h[:6]), Name: name, Role: role, CreatedAt: s.now().Unix(), CreatedBy: actor}
	s.writes.Lock()
	defer s.writes.Unlock()
	err := s.db.Update(func(txn *kv.Txn) error {
		keys, err := listKeys(txn)
		if err != nil {
			return err
		}
		for _, o := range keys {
			if o.Name == name && o.RevokedAt == nil {
				return outpost.Errorf(outpost.Conflict, "key_name_taken", "an active key named %s exists", outpost.Echo(name))
			}
		}
		if err := kv.PutJSON(txn, apiKeyKey(h), k); err != nil {
			return err
		}
		return s.audit(txn, actor, "apikey.create", k.ID, nil, k)
	})
	if err != nil {
		return "", APIKey{}, err
	}
	return secret, k, nil
}

func listKeys(txn *kv.Txn) ([]APIKey, error) {
	out := []APIKey{}
	err := kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindAPIKey}, nil, false, func(_ []byte, k APIKey) (bool, error) {
		out = append(out, k)
		return true, nil
	})
	return out, err
}

// Keys lists every issued key, revoked ones included.
func (s *Service) Keys(ctx context.Context) ([]APIKey, error) {
	var out []APIKey
	err := s.db.View(func(txn *kv.Txn) (err error) {
		out, err = listKeys(txn)
		return err
	})
	return out, err
}

// RevokeKey revokes the active key with this id or name.
func (s *Service) RevokeKey(ctx context.Context, actor, idOrName string) (APIKey, error) {
	s.writes.Lock()
	defer s.writes.Unlock()
	var revoked APIKey
	err := s.db.Update(func(txn *kv.Txn) error {
		var key []byte
		err := kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindAPIKey}, nil, false, func(k []byte, v APIKey) (bool, error) {
			if v.RevokedAt == nil && (v.ID == idOrName || v.Name == idOrName) {
				revoked, key = v, k
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		if key == nil {
			return outpost.Errorf(outpost.NotFound, "key_not_found", "no active key %s", outpost.Echo(idOrName))
		}
		before := revoked
		now := s.now().Unix()
		revoked.RevokedAt, revoked.RevokedBy = &now, &actor
		if err := kv.PutJSON(txn, key, revoked); err != nil {
			return err
		}
		return s.audit(txn, actor, "apikey.revoke", revoked.ID, before, revoked)
	})
	return revoked, err
}

// Authenticate returns the active key for a bearer token. Unknown, malformed
// and revoked keys are all unauthorized.
func (s *Service) Authenticate(ctx context.Context, token string) (APIKey, error) {
	unauthorized := outpost.Errorf(outpost.Unauthorized, "unauthorized", "missing or invalid API key")
	if !strings.HasPrefix(token, keyPrefix) && s.adminHash == nil {
		return APIKey{}, unauthorized
	}
	h := hashKey(token)
	if s.adminHash != nil && subtle.ConstantTimeCompare(h[:], s.adminHash[:]) == 1 {
		return APIKey{ID: "bootstrap", Name: "bootstrap", Role: RoleAdmin}, nil
	}
	var k APIKey
	var found bool
	err := s.db.View(func(txn *kv.Txn) (err error) {
		found, err = kv.GetJSON(txn, apiKeyKey(h), &k)
		return err
	})
	if err != nil {
		return APIKey{}, err
	}
	if !found || k.RevokedAt != nil {
		return APIKey{}, unauthorized
	}
	return k, nil
}
