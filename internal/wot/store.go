package wot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Records, under kv.PrefixWot:
//
//	'c' author → created_at (8 bytes) and the followed keys (32 bytes each):
//	             a contact list given to SetLists that the relay's store may
//	             not hold (lists the relay saved are read from there)
//	's' key    → FirstSeen (8 bytes, Unix seconds)
const (
	kindList byte = 'c'
	kindSeen byte = 's'
)

func listKey(k Key) []byte { return kv.Key(kv.PrefixWot, kindList, k[:]) }
func seenKey(k Key) []byte { return kv.Key(kv.PrefixWot, kindSeen, k[:]) }

func putList(txn *kv.Txn, author Key, at uint32, follows []Key) error {
	v := make([]byte, 8, 8+32*len(follows))
	binary.BigEndian.PutUint64(v, uint64(at))
	for _, f := range follows {
		v = append(v, f[:]...)
	}
	return txn.Set(listKey(author), v)
}

// listBatch bounds the bytes of contact lists one transaction writes,
// well inside what badger takes at once (kv.ErrTxnTooBig).
const listBatch = 2 << 20

// putLists stores lists, in as few transactions as fit.
func (w *WoT) putLists(lists []List) error {
	for len(lists) > 0 {
		n, size := 0, 0
		for n < len(lists) && (n == 0 || size+32*len(lists[n].Follows) < listBatch) {
			size += 8 + 32*len(lists[n].Follows)
			n++
		}
		err := w.db.Update(func(txn *kv.Txn) error {
			for _, l := range lists[:n] {
				if err := putList(txn, l.Author, l.At, l.Follows); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		lists = lists[n:]
	}
	return nil
}

// seenBatch bounds the first-seen records one transaction writes: the first
// walk of a large graph finds every member new.
const seenBatch = 10_000

// putSeen records at as the FirstSeen of keys that have none.
func (w *WoT) putSeen(keys []Key, at uint32) error {
	v := kv.U64(uint64(at))
	for len(keys) > 0 {
		n := min(len(keys), seenBatch)
		err := w.db.Record(func(txn *kv.Txn) error {
			for _, k := range keys[:n] {
				if err := putSeenOnce(txn, k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func putSeenOnce(txn *kv.Txn, k Key, v []byte) error {
	if has, err := txn.Has(seenKey(k)); has || err != nil {
		return err
	}
	return txn.Set(seenKey(k), v)
}

// Load reads the contact lists the walk needs, out from the seeds one hop
// at a time, from the relay's store and the records of lists it lacks
// (the newer of the two), and the first-seen times of the keys in the graph,
// then walks it; Run computes the rank. Records of lists no longer needed
// (an author out of reach, or a store of a version that kept every list)
// are deleted: the relay's store has them, should they be needed again.
func (w *WoT) Load(ctx context.Context) error {
	start := time.Now()
	w.apply.Lock()
	defer w.apply.Unlock()
	if err := w.settle(ctx, nil, false); err != nil {
		return err
	}
	if err := w.db.View(func(txn *kv.Txn) error { return w.loadSeen(ctx, txn) }); err != nil {
		return err
	}
	if err := w.prune(ctx); err != nil {
		return err
	}
	w.rewalk()
	w.markDirty()
	w.log.Info("wot: loaded", "keys", len(w.g.keys), "follows", w.g.edges(), "members", w.Members(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// decodeList reads a list record into follows' memory.
func decodeList(author Key, v []byte, follows []Key) (at uint32, _ []Key, err error) {
	if len(v) < 8 || (len(v)-8)%32 != 0 {
		return 0, nil, fmt.Errorf("wot: the contact list of %x is %d bytes", author, len(v))
	}
	follows = follows[:0]
	for b := v[8:]; len(b) > 0; b = b[32:] {
		follows = append(follows, Key(b[:32]))
	}
	return uint32(binary.BigEndian.Uint64(v)), follows, nil
}

// prune deletes the list records of authors whose lists are not held.
func (w *WoT) prune(ctx context.Context) error {
	var stale []Key
	prefix := []byte{kv.PrefixWot, kindList}
	err := w.db.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
		defer it.Close()
		w.mu.RLock()
		defer w.mu.RUnlock()
		for it.Rewind(); it.Valid() && ctx.Err() == nil; it.Next() {
			k := Key(it.Item().Key()[len(prefix):])
			if id, ok := w.g.lookup(k); !ok || w.g.out[id] == nil {
				stale = append(stale, k)
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	return w.deleteLists(stale)
}

// deleteLists deletes the list records of keys.
func (w *WoT) deleteLists(keys []Key) error {
	for len(keys) > 0 {
		n := min(len(keys), seenBatch)
		err := w.db.Update(func(txn *kv.Txn) error {
			for _, k := range keys[:n] {
				if err := txn.Delete(listKey(k)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// loadSeen sets the first-seen times of the keys in the graph; the others
// stay in the store, where FirstSeen finds them.
func (w *WoT) loadSeen(ctx context.Context, txn *kv.Txn) error {
	prefix := []byte{kv.PrefixWot, kindSeen}
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix, Values: true})
	defer it.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		id, ok := w.g.lookup(Key(it.Item().Key()[len(prefix):]))
		if !ok {
			continue
		}
		err := it.Item().Value(func(v []byte) error {
			if len(v) == 8 {
				w.seen[id] = uint32(binary.BigEndian.Uint64(v))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// notedMax bounds the keys Seen remembers having recorded outside the
// graph; past it the memory starts over and a key costs a read again.
const notedMax = 100_000

// Seen records that outpost received an event of k now, which makes now
// k's FirstSeen unless it has one. The time is outpost's own, never the
// event's created_at, which the key's owner signs and may date as he likes.
func (w *WoT) Seen(k Key) error {
	w.mu.RLock()
	id, inGraph := w.g.lookup(k)
	_, noted := w.noted[k]
	known := noted || (inGraph && w.seen[id] != 0)
	w.mu.RUnlock()
	if known {
		return nil
	}
	now := uint32(w.now().Unix())
	if err := w.db.Record(func(txn *kv.Txn) error { return putSeenOnce(txn, k, kv.U64(uint64(now))) }); err != nil {
		return err
	}
	first, _, err := w.storedSeen(k)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if id, ok := w.g.lookup(k); ok {
		w.seen[id] = uint32(first)
		return nil
	}
	if len(w.noted) >= notedMax {
		clear(w.noted)
	}
	w.noted[k] = struct{}{}
	return nil
}

// FirstSeen is when outpost first received an event of k or the web of
// trust first reached it; found is false when neither happened.
func (w *WoT) FirstSeen(k Key) (at time.Time, found bool, err error) {
	if st := w.Standing(k); st.FirstSeen != 0 {
		return time.Unix(st.FirstSeen, 0), true, nil
	}
	unix, found, err := w.storedSeen(k)
	if !found || err != nil {
		return time.Time{}, false, err
	}
	return time.Unix(unix, 0), true, nil
}

func (w *WoT) storedSeen(k Key) (unix int64, found bool, err error) {
	err = w.db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(seenKey(k))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) == 8 {
				unix, found = int64(binary.BigEndian.Uint64(v)), true
			}
			return nil
		})
	})
	return unix, found, err
}
