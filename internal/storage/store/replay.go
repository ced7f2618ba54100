package store

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Replays remembers one-time tokens (NIP-98 authorization event ids) in the
// database, so a token is used once across restarts too: a replay cache in
// memory forgets at every restart, and a token stays valid for its whole
// time window. Each record carries a TTL at its expiry: once expired
// it is invisible, and compaction sweeps it away, with no job of ours.
type Replays struct{ db *kv.DB }

// NewReplays keeps the used tokens in db.
func NewReplays(db *kv.DB) *Replays { return &Replays{db: db} }

func replayKey(id string) []byte { return kv.Key(kv.PrefixReplay, 1, []byte(id)) }

// Use marks id used until until and reports true, or reports false when id
// was already used and has not expired at now. Of two concurrent uses of one
// id, one wins: the other's transaction conflicts, and its retry finds the id.
func (r *Replays) Use(id string, now, until time.Time) (bool, error) {
	key := replayKey(id)
	var fresh bool
	err := r.db.Update(func(txn *kv.Txn) error {
		fresh = true
		item, err := txn.Get(key)
		switch {
		case err == nil:
			var exp []byte
			if exp, err = item.ValueCopy(nil); err != nil {
				return err
			}
			if len(exp) == 8 && now.Unix() < int64(binary.BigEndian.Uint64(exp)) {
				fresh = false
				return nil
			}
		case !errors.Is(err, kv.ErrNotFound):
			return err
		}
		// The TTL runs on the wall clock, the value's expiry on the
		// caller's (tests inject one).
		return txn.SetTTL(key, kv.U64(uint64(until.Unix())), max(until.Sub(now), time.Second))
	})
	return fresh && err == nil, err
}
