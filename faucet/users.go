package faucet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Session is a login. Per-request NIP-98 authentication makes one that is
// never stored.
type Session struct {
	PubKey    string `json:"pubkey"`
	Method    string `json:"method"` // LoginNIP98 or LoginNPub
	CreatedAt int64  `json:"created_at"`
	ExpiresAt int64  `json:"expires_at"`
}

// User is what the faucet keeps about a pubkey.
type User struct {
	PubKey           string            `json:"pubkey"`
	Profile          *profiles.Profile `json:"profile,omitempty"`
	FirstSeenAt      int64             `json:"first_seen_at,omitempty"`
	ProfileFetchedAt int64             `json:"profile_fetched_at,omitempty"`
	CreatedAt        int64             `json:"created_at"`
}

// UserProfile is the public view of a user; unknown fields are null.
type UserProfile struct {
	PubKey           string  `json:"pubkey"`
	NPub             string  `json:"npub"`
	Name             *string `json:"name"`
	DisplayName      *string `json:"display_name"`
	Picture          *string `json:"picture"`
	NIP05            *string `json:"nip05"`
	LUD16            *string `json:"lud16"`
	FirstSeenAt      *int64  `json:"first_seen_at"`
	ProfileFetchedAt *int64  `json:"profile_fetched_at"`
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func intOrNil(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// Public is the user as the API shows it.
func (u User) Public() UserProfile {
	p := UserProfile{PubKey: u.PubKey, NPub: pubkey.NPub(u.PubKey), FirstSeenAt: intOrNil(u.FirstSeenAt), ProfileFetchedAt: intOrNil(u.ProfileFetchedAt)}
	if u.Profile != nil {
		p.Name, p.DisplayName, p.Picture = strOrNil(u.Profile.Name), strOrNil(u.Profile.DisplayName), strOrNil(u.Profile.Picture)
		p.NIP05, p.LUD16 = strOrNil(u.Profile.NIP05), strOrNil(u.Profile.LUD16)
	}
	return p
}

// LUD16 is the Lightning address of the user's profile, or "".
func (u User) LUD16() string {
	if u.Profile == nil {
		return ""
	}
	return u.Profile.LUD16
}

func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return string(h[:])
}

// Login makes a session for pubkey (hex), already authenticated by method:
// NIP-98, or nothing at all for an npub login. The token is returned once;
// only its hash is stored.
func (s *Service) Login(ctx context.Context, pk, method string) (token string, sess Session, u User, err error) {
	if method == LoginNPub && !s.cfg.NPubLogin {
		return "", Session{}, User{}, outpost.Errorf(outpost.Forbidden, "npub_login_disabled", "npub login is turned off on this faucet")
	}
	u, err = s.EnsureUser(ctx, pk)
	if err != nil {
		return "", Session{}, User{}, err
	}
	ttl := s.cfg.SessionTTL
	if method == LoginNPub {
		ttl = s.cfg.NPubSessionTTL
	}
	now := s.now()
	b := make([]byte, 32)
	rand.Read(b)
	token = "ofs_" + base64.RawURLEncoding.EncodeToString(b)
	sess = Session{PubKey: pk, Method: method, CreatedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix()}
	err = s.db.Update(func(txn *kv.Txn) error {
		v, err := jsonBytes(sess)
		if err != nil {
			return err
		}
		// The store forgets the session a little after it expires; expiry
		// itself is checked against our clock.
		return txn.SetTTL(key(kindSession, hashToken(token)), v, ttl+time.Hour)
	})
	if err != nil {
		return "", Session{}, User{}, err
	}
	s.log.Info("faucet login", "pubkey", pk, "method", method)
	return token, sess, u, nil
}

var errSession = outpost.Errorf(outpost.Unauthorized, "unauthorized", "the session token is unknown or expired; log in again").With("check", "session")

// Session returns the session of a bearer token.
func (s *Service) Session(ctx context.Context, token string) (Session, error) {
	if len(token) < 8 || len(token) > 128 {
		return Session{}, errSession
	}
	var sess Session
	var found bool
	err := s.db.View(func(txn *kv.Txn) error {
		var err error
		found, err = kv.GetJSON(txn, key(kindSession, hashToken(token)), &sess)
		return err
	})
	if err != nil {
		return Session{}, err
	}
	if !found || s.now().Unix() >= sess.ExpiresAt {
		return Session{}, errSession
	}
	return sess, nil
}

func (s *Service) getUser(txn *kv.Txn, pk string) (User, bool, error) {
	var u User
	found, err := kv.GetJSON(txn, key(kindUser, pk), &u)
	return u, found, err
}

// User returns the stored user (a fresh one when unknown).
func (s *Service) User(ctx context.Context, pk string) (User, error) {
	var u User
	err := s.db.View(func(txn *kv.Txn) error {
		var found bool
		var err error
		u, found, err = s.getUser(txn, pk)
		if !found {
			u = User{PubKey: pk}
		}
		return err
	})
	u.FirstSeenAt = s.received(pk, false) // not the stored one: older versions took it from created_at
	return u, err
}

// EnsureUser returns the user, fetching the profile when it was never
// fetched or is older than ProfileMaxAge.
func (s *Service) EnsureUser(ctx context.Context, pk string) (User, error) {
	u, err := s.User(ctx, pk)
	if err != nil {
		return User{}, err
	}
	if u.ProfileFetchedAt == 0 || s.now().Sub(time.Unix(u.ProfileFetchedAt, 0)) > s.cfg.ProfileMaxAge {
		return s.fetchProfile(ctx, pk)
	}
	return u, nil
}

// RefreshProfile refetches the profile, at most once per ProfileRefresh per pubkey.
func (s *Service) RefreshProfile(ctx context.Context, pk string) (User, error) {
	if ok, wait := s.refresh.Allow(pk); !ok {
		e := outpost.Errorf(outpost.RateLimited, "rate_limit_exceeded", "the profile can be refreshed once every %s; retry in %.0f seconds",
			s.cfg.ProfileRefresh, max(1, wait.Seconds())).With("reason", "profile_refresh")
		e.RetryAfter = wait
		return User{}, e
	}
	return s.fetchProfile(ctx, pk)
}

// fetchProfile looks the profile up and stores what it found: a newer
// profile replaces the stored one, an empty answer (relays down, say) keeps
// it, and the first-seen time only ever moves back.
func (s *Service) fetchProfile(ctx context.Context, pk string) (User, error) {
	var cutoff time.Time
	if s.cfg.MinAccountAge > 0 {
		cutoff = s.now().Add(-s.cfg.MinAccountAge)
	}
	res := s.cfg.Profiles.Fetch(ctx, pk, cutoff)
	firstSeen := s.received(pk, res.FirstSeenAt > 0) // the fetch received an event of pk now, whatever its date
	now := s.now().Unix()
	var u User
	err := s.db.Update(func(txn *kv.Txn) error {
		var found bool
		var err error
		u, found, err = s.getUser(txn, pk)
		if err != nil {
			return err
		}
		if !found {
			u = User{PubKey: pk, CreatedAt: now}
		}
		if res.Profile != nil && (u.Profile == nil || res.Profile.CreatedAt >= u.Profile.CreatedAt) {
			u.Profile = res.Profile
		}
		u.FirstSeenAt = firstSeen
		u.ProfileFetchedAt = now
		return kv.PutJSON(txn, key(kindUser, pk), u)
	})
	if len(res.Failed) > 0 {
		s.log.Info("faucet profile: some relays failed", "pubkey", pk, "relays", res.Failed)
	}
	return u, err
}

// maxFollowedUsers bounds the profiles followed on upstream relays.
const maxFollowedUsers = 50_000

// UserPubKeys lists the pubkeys (hex) of the faucet's users, in key order,
// at most maxFollowedUsers: their kind-0 profiles are followed upstream.
func (s *Service) UserPubKeys(ctx context.Context) []string {
	var out []string
	prefix := key(kindUser)
	s.db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid() && len(out) < maxFollowedUsers && ctx.Err() == nil; it.Next() {
			out = append(out, string(it.Item().Key()[len(prefix):]))
		}
		return nil
	})
	return out
}
