package banlist

import (
	"cmp"
	"context"
	"encoding/hex"
	"slices"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/policies"
)

// Ban states. Bans are never deleted: unban lifts a ban, time expires it.
const (
	StateActive  = "active"
	StateExpired = "expired"
	StateLifted  = "lifted"
)

// MaxReasonLen caps ban and report reasons.
const MaxReasonLen = 200

// Ban is one ban of a public key.
type Ban struct {
	ID        string  `json:"id"`
	PubKey    string  `json:"pubkey"` // hex
	Reason    string  `json:"reason"`
	CreatedAt int64   `json:"created_at"`
	ExpiresAt *int64  `json:"expires_at"`
	BannedBy  string  `json:"banned_by"`
	LiftedAt  *int64  `json:"lifted_at"`
	LiftedBy  *string `json:"lifted_by"`
	// Batch is the id of the audit entry of the batch that made the ban
	// (BanMany); empty for a ban made alone, audited by itself.
	Batch string `json:"batch,omitempty"`
}

// State is the ban's state at now (unix seconds).
func (b Ban) State(now int64) string {
	switch {
	case b.LiftedAt != nil:
		return StateLifted
	case b.ExpiresAt != nil && *b.ExpiresAt <= now:
		return StateExpired
	default:
		return StateActive
	}
}

func (b Ban) policy() policies.Ban {
	p := policies.Ban{PubKey: b.PubKey, Reason: b.Reason}
	if b.ExpiresAt != nil {
		p.ExpiresAt = *b.ExpiresAt
	}
	return p
}

func banKey(id string) []byte {
	raw, _ := hex.DecodeString(id)
	return kv.Key(kv.PrefixBanlist, kindBan, raw)
}

func pubKeyIndex(pk string) []byte {
	raw, _ := hex.DecodeString(pk)
	return kv.Key(kv.PrefixBanlist, kindBanByPubKey, raw)
}

func getBan(txn *kv.Txn, id string) (Ban, error) {
	var b Ban
	found, err := kv.GetJSON(txn, banKey(id), &b)
	if err == nil && !found {
		err = outpost.Errorf(outpost.Internal, "internal", "ban %s missing", id)
	}
	return b, err
}

// currentBan is pk's latest ban, if any.
func currentBan(txn *kv.Txn, pk string) (Ban, bool, error) {
	var id string
	found, err := kv.GetJSON(txn, pubKeyIndex(pk), &id)
	if err != nil || !found {
		return Ban{}, false, err
	}
	b, err := getBan(txn, id)
	return b, err == nil, err
}

// currentOrMirrored is pk's latest ban: its own record, or else the one a
// mirrored page holds (paged), as a record not yet written.
func (s *Service) currentOrMirrored(txn *kv.Txn, pk string, now time.Time) (b Ban, found, paged bool, err error) {
	if b, found, err = currentBan(txn, pk); err != nil || found {
		return b, found, false, err
	}
	b, paged = s.mirroredBan(pk, now)
	return b, paged, paged, nil
}

func validReason(reason string) error {
	if reason == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "reason is required")
	}
	if len([]rune(reason)) > MaxReasonLen {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "reason is longer than %d characters", MaxReasonLen)
	}
	return nil
}

// Ban bans pk (hex) for reason until expiresAt (nil: no end). A key that is
// already banned gets the new ban instead; the old one is recorded as lifted.
// A ban with no end also takes the key off the allow list (NIP-86
// banpubkey); a temporary one leaves it there, to apply again once the ban
// lapses.
func (s *Service) Ban(ctx context.Context, actor, pk, reason string, expiresAt *int64) (Ban, error) {
	if err := s.writable(actor); err != nil {
		return Ban{}, err
	}
	if err := validReason(reason); err != nil {
		return Ban{}, err
	}
	now := s.now()
	if expiresAt != nil && *expiresAt <= now.Unix() {
		return Ban{}, outpost.Errorf(outpost.Invalid, "invalid_expires_at", "expires_at must be in the future")
	}
	var ban Ban
	var unallowed bool
	err := s.update(func(txn *kv.Txn) error {
		var before any
		var err error
		ban, before, unallowed, err = s.putBan(txn, actor, pk, reason, expiresAt, now, "")
		if err != nil {
			return err
		}
		return s.audit(txn, actor, "ban", pk, before, ban)
	}, func() {
		if unallowed {
			s.list.UnallowPubKey(pk)
		}
		s.list.Ban(ban.policy())
	})
	if err != nil {
		return Ban{}, err
	}
	return ban, nil
}

// putBan writes a ban of pk inside txn: it replaces pk's active ban, which
// is recorded as lifted (and returned as before), and a ban with no end
// takes pk off the allow list (unallowed). batch names the batch audit
// entry of a ban made in bulk.
func (s *Service) putBan(txn *kv.Txn, actor, pk, reason string, expiresAt *int64, now time.Time, batch string) (ban Ban, before any, unallowed bool, err error) {
	// The snapshot holds what the store does (it is changed as each write
	// commits, under s.writes, which the caller holds), so the store is
	// read only for what the snapshot says is there: a bulk ban of new
	// keys, the spam wave's case, reads nothing.
	if expiresAt == nil && s.list.AllowListed(pk) {
		_, unallowed, err = removeRecord[AllowedPubKey](s, txn, actor, "pubkey.unallow", pk, allowedPubKeyKey(pk), nil)
		if err != nil {
			return Ban{}, nil, false, err
		}
	}
	if _, active := s.list.Banned(pk, now.Unix()); active {
		if before, err = s.liftOld(txn, actor, pk, now); err != nil {
			return Ban{}, nil, false, err
		}
	}
	ban = Ban{ID: hex.EncodeToString(s.newID(now)), PubKey: pk, Reason: reason, CreatedAt: now.Unix(),
		ExpiresAt: expiresAt, BannedBy: actor, Batch: batch}
	if err := kv.PutJSON(txn, banKey(ban.ID), ban); err != nil {
		return Ban{}, nil, false, err
	}
	return ban, before, unallowed, kv.PutJSON(txn, pubKeyIndex(pk), ban.ID)
}

// liftOld records pk's active ban as lifted, replaced by a new one; it
// returns the ban as it was (nil: none).
func (s *Service) liftOld(txn *kv.Txn, actor, pk string, now time.Time) (before any, err error) {
	old, found, _, err := s.currentOrMirrored(txn, pk, now)
	if err != nil {
		return nil, err
	}
	if found && old.State(now.Unix()) == StateActive {
		at := now.Unix()
		old.LiftedAt, old.LiftedBy = &at, &actor
		if err := kv.PutJSON(txn, banKey(old.ID), old); err != nil {
			return nil, err
		}
		return old, nil
	}
	return nil, nil
}

// Unban lifts pk's active ban; without one it fails with ban_not_found.
func (s *Service) Unban(ctx context.Context, actor, pk string) (Ban, error) {
	if err := s.writable(actor); err != nil {
		return Ban{}, err
	}
	now := s.now().Unix()
	var ban Ban
	err := s.update(func(txn *kv.Txn) error {
		var lifted bool
		var err error
		if ban, lifted, err = s.liftBan(txn, actor, pk, now); err == nil && !lifted {
			err = outpost.Errorf(outpost.NotFound, "ban_not_found", "this public key has no active ban")
		}
		return err
	}, func() { s.list.Unban(pk) })
	if err != nil {
		return Ban{}, err
	}
	return ban, nil
}

// liftBan lifts pk's active ban inside txn, if it has one.
func (s *Service) liftBan(txn *kv.Txn, actor, pk string, now int64) (Ban, bool, error) {
	b, found, paged, err := s.currentOrMirrored(txn, pk, time.Unix(now, 0))
	if err != nil || !found || b.State(now) != StateActive {
		return Ban{}, false, err
	}
	before := b
	b.LiftedAt, b.LiftedBy = &now, &actor
	if err := kv.PutJSON(txn, banKey(b.ID), b); err != nil {
		return Ban{}, false, err
	}
	if paged { // the lifted record is now what the store says of pk, over its page
		if err := kv.PutJSON(txn, pubKeyIndex(pk), b.ID); err != nil {
			return Ban{}, false, err
		}
	}
	return b, true, s.audit(txn, actor, "unban", pk, before, b)
}

// Status is pk's active ban, from the snapshot.
func (s *Service) Status(pk string) (policies.Ban, bool) {
	return s.list.Banned(pk, s.now().Unix())
}

// Bans lists bans newest first, created at or before until (unix; 0 = no
// bound), optionally only those in state: the records, and the current
// bans of the mirrored pages (pageBans).
func (s *Service) Bans(ctx context.Context, state string, until int64, limit int) ([]Ban, error) {
	now := s.now().Unix()
	out := []Ban{}
	var paged []Ban
	err := s.db.View(func(txn *kv.Txn) error {
		err := kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindBan}, seekUntil(kindBan, until), true,
			func(_ []byte, b Ban) (bool, error) {
				if state == "" || b.State(now) == state {
					out = append(out, b)
				}
				return len(out) < limit, ctx.Err()
			})
		if err == nil && state != StateLifted { // a page's bans are never lifted: that makes a record
			paged, err = s.pageBans(ctx, txn, state, until, limit, now)
		}
		return err
	})
	if len(paged) == 0 {
		return out, err
	}
	out = append(out, paged...)
	slices.SortFunc(out, func(a, b Ban) int { return cmp.Compare(b.ID, a.ID) }) // ids are times: newest first
	return out[:min(len(out), limit)], err
}

// Word is a blocked word or phrase.
type Word struct {
	Word    string `json:"word"`
	AddedAt int64  `json:"added_at"`
	AddedBy string `json:"added_by"`
}

// MaxWordLen caps a blocked word or phrase.
const MaxWordLen = 100

func wordKey(w string) []byte {
	return kv.Key(kv.PrefixBanlist, kindWord, []byte(policies.NormalizeText(w)))
}

func validWord(word string) error {
	if policies.NormalizeText(word) == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_word", "word must contain a letter or digit")
	}
	if len([]rune(word)) > MaxWordLen {
		return outpost.Errorf(outpost.Invalid, "invalid_word", "word is longer than %d characters", MaxWordLen)
	}
	return nil
}

// AddWord blocks word; a word with the same normal form conflicts.
func (s *Service) AddWord(ctx context.Context, actor, word string) (Word, error) {
	if err := s.writable(actor); err != nil {
		return Word{}, err
	}
	if err := validWord(word); err != nil {
		return Word{}, err
	}
	s.writes.Lock()
	defer s.writes.Unlock()
	w := Word{Word: word, AddedAt: s.now().Unix(), AddedBy: actor}
	err := s.db.Update(func(txn *kv.Txn) error {
		var existing Word
		found, err := kv.GetJSON(txn, wordKey(word), &existing)
		if err != nil {
			return err
		}
		if found {
			return outpost.Errorf(outpost.Conflict, "word_exists", "%s is already blocked (as %s)", outpost.Echo(word), outpost.Echo(existing.Word)).With("word", existing.Word)
		}
		if err := kv.PutJSON(txn, wordKey(word), w); err != nil {
			return err
		}
		return s.audit(txn, actor, "word.add", word, nil, w)
	})
	if err != nil {
		return Word{}, err
	}
	s.list.AddWords(w.Word)
	return w, nil
}

// RemoveWord unblocks word (matched by its normal form).
func (s *Service) RemoveWord(ctx context.Context, actor, word string) (Word, error) {
	if err := s.writable(actor); err != nil {
		return Word{}, err
	}
	s.writes.Lock()
	defer s.writes.Unlock()
	var removed Word
	err := s.db.Update(func(txn *kv.Txn) error {
		found, err := kv.GetJSON(txn, wordKey(word), &removed)
		if err != nil {
			return err
		}
		if !found || policies.NormalizeText(word) == "" {
			return outpost.Errorf(outpost.NotFound, "word_not_found", "%s is not blocked", outpost.Echo(word))
		}
		if err := txn.Delete(wordKey(word)); err != nil {
			return err
		}
		return s.audit(txn, actor, "word.remove", removed.Word, removed, nil)
	})
	if err != nil {
		return Word{}, err
	}
	s.list.RemoveWords(removed.Word)
	return removed, nil
}

// Words lists the blocked words with their metadata.
func (s *Service) Words(ctx context.Context) ([]Word, error) {
	out := []Word{}
	err := s.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindWord}, nil, false, func(_ []byte, w Word) (bool, error) {
			out = append(out, w)
			return true, nil
		})
	})
	return out, err
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// ExpiresIn converts a ban duration in seconds to an expiry time.
func (s *Service) ExpiresIn(seconds int64) int64 {
	return s.now().Add(time.Duration(seconds) * time.Second).Unix()
}
