package events

import (
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// newest bounds, for each author and each (author, kind), how new its newest
// stored event may be: no stored event of the range is newer than its bound,
// and a range without a bound holds no event. A scan of many ranges (a home
// feed: 300 follows × 2 kinds) then opens a range only when the merge
// reaches its bound, so ranges whose events are all older than the limit'th
// result, and empty ones, cost no seek; in badger a seek visits every level
// of the tree and is most of a scan's cost.
//
// Bounds only grow: a deleted or replaced event leaves its range's bound as
// it was, which costs at most a seek that finds less. Saving raises a bound
// before the event is committed, so no reader sees an event newer than its
// range's bound. Ranges are keyed by a hash of their index prefix; two
// ranges sharing a hash share the larger bound, which is still a bound.
type newest struct {
	mu   sync.RWMutex
	at   map[uint64]int64 // nil: not kept (more ranges than maxNewest)
	seed maphash.Seed
}

// maxNewest is how many ranges newest keeps at most (20 to 35 bytes each):
// past it, it keeps none and every scan opens every range at its start.
const maxNewest = 2 << 20

func (n *newest) key(prefix []byte) uint64 { return maphash.Bytes(n.seed, prefix) }

// bound is the newest created_at a range may hold; ok is false when the
// range holds nothing. known is false when newest keeps no bounds.
func (n *newest) bound(prefix []byte) (ts int64, ok, known bool) {
	if !(len(prefix) == 33 && prefix[0] == prefixAuthor || len(prefix) == 35 && prefix[0] == prefixAuthorKind) {
		return 0, false, false
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.at == nil {
		return 0, false, false
	}
	ts, ok = n.at[n.key(prefix)]
	return ts, ok, true
}

// raise makes the bounds of an event's author and author-kind ranges at
// least createdAt.
func (n *newest) raise(pubkey []byte, kind uint16, createdAt int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.at == nil {
		return
	}
	var b [1 + 32 + 2]byte
	b[0] = prefixAuthor
	copy(b[1:], pubkey)
	n.set(n.key(b[:33]), createdAt)
	b[0] = prefixAuthorKind
	binary.BigEndian.PutUint16(b[33:], kind)
	n.set(n.key(b[:]), createdAt)
}

func (n *newest) set(k uint64, ts int64) {
	if n.at == nil {
		return
	}
	if cur, ok := n.at[k]; ok && cur >= ts {
		return
	}
	if len(n.at) >= maxNewest {
		n.at = nil
		return
	}
	n.at[k] = ts
}

// load sets the bounds from the author-kind index, whose first key in each
// range is the range's newest event. It runs once, as the store opens.
func (n *newest) load(db *kv.DB) error {
	n.mu.Lock()
	n.at = map[uint64]int64{}
	n.mu.Unlock()
	return db.View(func(txn *kv.Txn) error {
		prefix := []byte{prefixAuthorKind}
		it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
		defer it.Close()
		var last [1 + 32 + 2]byte
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			k := it.Item().Key()
			if len(k) != len(last)+tailLen || [len(last)]byte(k) == last {
				continue
			}
			last = [len(last)]byte(k)
			n.raise(k[1:33], binary.BigEndian.Uint16(k[33:]), int64(decodeTS(k[len(last):])))
		}
		return nil
	})
}
