package wot

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Which contact lists the graph holds.
//
// The walk only goes on through members short of the depth: hops and
// followers within the depth come from their lists alone. So only those
// authors' lists ("needed") make ids and edges; any other list is left to
// the relay's event store, where it is read when its author comes within
// reach, and a list whose author goes out of reach is let go. A flood of
// lists by keys outside the web of trust — however many keys, however long
// their lists — leaves the graph as it was.
//
// The graph is bounded besides, because the needed lists themselves are
// not: members may follow 10,000 keys each. Past maxFollowsHeld follows or
// maxKeys keys, the lists of the farthest members are let go first (then
// the keys they alone named), so the seeds' reach stays whole and only the
// outer ring is cut, and of equally far lists the longest go first (a
// flood of 10,000-follow lists before the ordinary ones); Size reports it,
// and the log says so once.
const (
	// maxFollowsHeld: 48 MB of ids, about the 9M distinct follows of
	// 200,000 real-sized lists (bench wot) and a margin.
	maxFollowsHeld = 12_000_000
	// maxKeys: every key costs ~130 bytes of the graph's per-key arrays,
	// the key map, the walk's levels and a rank computation; a million is
	// five times the keys of 200,000 lists, ~130 MB at most.
	maxKeys = 1_000_000
	// compactFloor: below it ids are not worth freeing.
	compactFloor = 1 << 16
	// settleRounds bounds the rounds of reading lists after one change:
	// each round reaches a hop further, so depth+1 rounds suffice unless
	// a list read brings a key nearer and takes another out (followers
	// count only nearer members), which must not loop.
	settleRounds = 16
)

// bounds are the graph's bounds, the constants above but in tests.
type bounds struct{ follows, keys, compactFloor int }

var defaultBounds = bounds{follows: maxFollowsHeld, keys: maxKeys, compactFloor: compactFloor}

// Events is where the lists the graph does not hold are read back when
// their authors come within reach: the relay's store (*events.Store).
type Events interface {
	Address(ctx context.Context, kind int, pubkey, d string) (*nostr.Event, error)
}

// Size is the graph's size: the keys with an id, the follows held, and
// whether its bound left out the farthest members' lists.
func (w *WoT) Size() (keys, follows int, full bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return len(w.g.keys), w.g.edges(), w.full
}

// needed reports whether the walk goes on through id's list: a member
// short of the depth, as of the last walk.
func (w *WoT) needed(s *snapshot, id uint32) bool {
	return int(id) < len(s.member) && s.member[id] && int(s.hops[id]) < w.cfg.Depth
}

// settle brings the lists held in line with the walk: it reads the lists
// newly needed (from pending, else the newer of the store's own record and
// the relay's event), the nearest first, and lets go of those no longer
// needed, walking again after each round. saved says the relay's store
// holds pending's lists. The caller holds apply.
func (w *WoT) settle(ctx context.Context, pending map[Key]List, saved bool) error {
	for range settleRounds {
		w.rewalk()
		load, drop := w.wanted()
		if err := w.release(drop); err != nil {
			return err
		}
		if len(load) == 0 {
			return nil
		}
		if err := w.fill(ctx, load, pending, saved); err != nil {
			return err
		}
	}
	w.rewalk()
	return nil
}

// wanted lists the needed ids whose lists are neither held nor known
// missing, the nearest first, and the held lists no longer needed. A key
// out of reach forgets it was missing, to be looked for when back.
func (w *WoT) wanted() (load []Key, drop []uint32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.snap.Load()
	var ids []uint32
	for id := range w.g.keys {
		need := w.needed(s, uint32(id))
		switch {
		case need && w.g.out[id] == nil && !w.missing[id]:
			ids = append(ids, uint32(id))
		case !need && w.g.out[id] != nil:
			drop = append(drop, uint32(id))
		case !need:
			w.missing[id] = false
		}
	}
	slices.SortStableFunc(ids, func(a, b uint32) int { return int(s.hops[a]) - int(s.hops[b]) })
	for _, id := range ids {
		load = append(load, w.g.keys[id])
	}
	return load, drop
}

// release lets go of the lists of drop, in memory and in the store.
func (w *WoT) release(drop []uint32) error {
	if len(drop) == 0 {
		return nil
	}
	w.mu.Lock()
	keys := make([]Key, len(drop))
	for i, id := range drop {
		keys[i] = w.g.keys[id]
		w.g.drop(id)
	}
	w.tidy()
	w.mu.Unlock()
	w.markDirty()
	return w.deleteLists(keys)
}

// fill reads and takes the lists of load one at a time, so that no more
// than one is held as keys. Only a list the relay's store lacks (pending,
// not saved) is written as a record of the web of trust's own, in batches;
// a record the relay's store has a list as new as is deleted (a store of a
// version that kept every list).
func (w *WoT) fill(ctx context.Context, load []Key, pending map[Key]List, saved bool) error {
	var write []List
	var redundant []Key
	size := 0
	for _, k := range load {
		l, src, err := w.find(ctx, k, pending)
		if err != nil {
			return err
		}
		if src == fromEventsOverRecord {
			redundant = append(redundant, k)
		}
		if w.take(k, l, src != notFound) && src == fromPending && !saved {
			write, size = append(write, l), size+8+32*len(l.Follows)
		}
		if size >= listBatch {
			if err := w.putLists(write); err != nil {
				return err
			}
			write, size = write[:0], 0
		}
	}
	w.mu.Lock()
	w.tidy()
	w.mu.Unlock()
	w.markDirty()
	if err := w.deleteLists(redundant); err != nil {
		return err
	}
	return w.putLists(write)
}

// take sets k's list, unless it was not found or the graph is full; then k
// is marked missing, not to be looked for again while it stays needed.
func (w *WoT) take(k Key, l List, found bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	id, _ := w.g.lookup(k)
	if found && w.g.held+len(l.Follows) > w.bounds.follows {
		w.setFull()
		found = false
	}
	if !found {
		w.missing[id] = true
		return false
	}
	w.g.set(k, l.Follows, l.At)
	w.growSeen()
	return true
}

// source is where find found a list.
type source int

const (
	notFound source = iota
	fromPending
	fromRecord           // the web of trust's own record
	fromEvents           // the relay's store
	fromEventsOverRecord // the relay's store, whose list is as new as the record
)

// find reads k's list: pending's, else the newer of the store's record
// and the relay's event.
func (w *WoT) find(ctx context.Context, k Key, pending map[Key]List) (List, source, error) {
	if l, ok := pending[k]; ok {
		return l, fromPending, nil
	}
	rec, stored, err := w.storedList(k)
	if err != nil {
		return List{}, notFound, err
	}
	ev, saved, err := w.savedList(ctx, k)
	switch {
	case err != nil:
		return List{}, notFound, err
	case saved && stored && ev.At >= rec.At:
		return ev, fromEventsOverRecord, nil
	case stored:
		return rec, fromRecord, nil
	case saved:
		return ev, fromEvents, nil
	}
	return List{}, notFound, nil
}

// savedList reads k's list from the relay's store.
func (w *WoT) savedList(ctx context.Context, k Key) (l List, found bool, err error) {
	if w.events == nil {
		return List{}, false, nil
	}
	ev, err := w.events.Address(ctx, nostr.KindFollowList, hex.EncodeToString(k[:]), "")
	if err != nil || ev == nil {
		return List{}, false, err
	}
	l, found = w.list(ev)
	return l, found, nil
}

// storedList reads k's record.
func (w *WoT) storedList(k Key) (l List, found bool, err error) {
	err = w.db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(listKey(k))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			l.Author = k
			l.At, l.Follows, err = decodeList(k, v, nil)
			found = err == nil
			return err
		})
	})
	return l, found, err
}

// tidy keeps the graph within its bound, the caller holding mu: it frees
// the ids no list names once they are as many as those in use, and past
// the bound lets go of the farthest members' lists, a tenth of the follows
// at a time, until it holds again. A graph well within the bound again
// forgets which lists it left out, to read them at the next change.
func (w *WoT) tidy() {
	b := w.bounds
	if n := len(w.g.keys); n > b.keys || w.g.removed > max(b.compactFloor, n/2) {
		w.compact()
	}
	for w.g.held > b.follows || len(w.g.keys) > b.keys {
		w.setFull()
		w.evict(w.g.held - w.g.held/10)
		w.compact()
	}
	if w.full && w.g.held < b.follows*8/10 && len(w.g.keys) < b.keys*8/10 {
		w.full = false
		clear(w.missing)
	}
}

func (w *WoT) setFull() {
	if !w.full {
		w.log.Warn("wot: the graph is full; the farthest members' contact lists are left out", "keys", len(w.g.keys), "follows", w.g.held)
	}
	w.full = true
}

// evict lets go of held lists, the farthest authors' first and of those
// the longest, until at most keep follows are held; their authors are
// marked missing.
func (w *WoT) evict(keep int) {
	s := w.snap.Load()
	hop := func(id uint32) int {
		if int(id) < len(s.hops) {
			return int(s.hops[id])
		}
		return unreached
	}
	var held []uint32
	for id, o := range w.g.out {
		if o != nil {
			held = append(held, uint32(id))
		}
	}
	slices.SortStableFunc(held, func(a, b uint32) int {
		return cmp.Or(hop(b)-hop(a), len(w.g.out[b])-len(w.g.out[a]))
	})
	for _, id := range held {
		if w.g.held <= keep {
			return
		}
		w.g.drop(id)
		w.missing[id] = true
	}
}

// compact frees the ids no list names, remapping all that is kept by id;
// the caller holds mu. The walk's snapshot is remapped too (rank and all),
// so lookups stay right until the next walk, and a rank computation under
// way is discarded (gen).
func (w *WoT) compact() {
	c, remap := w.g.compact(w.seeds)
	for i, id := range w.seeds {
		w.seeds[i] = remap[id]
	}
	n := len(c.keys)
	w.seen = remapped(w.seen, remap, n, 0)
	w.missing = remapped(w.missing, remap, n, false)
	w.walked = slices.DeleteFunc(remapIDs(w.walked, remap), func(id uint32) bool { return id == gone })
	s := w.snap.Load()
	ns := &snapshot{levels: levels{hops: remapped(s.hops, remap, n, unreached), followers: remapped(s.followers, remap, n, 0),
		member: remapped(s.member, remap, n, false)}, rank: remapped(s.rank, remap, n, 0), members: s.members, median: s.median}
	w.g = c
	w.gen++
	w.snap.Store(ns)
}

// remapped is per-id data moved to the new ids; an old id beyond the data
// (a key the snapshot did not know yet) has def.
func remapped[T any](v []T, remap []uint32, n int, def T) []T {
	out := make([]T, n)
	for old, id := range remap {
		if id == gone {
			continue
		}
		out[id] = def
		if old < len(v) {
			out[id] = v[old]
		}
	}
	return out
}

func remapIDs(ids, remap []uint32) []uint32 {
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = remap[id]
	}
	return out
}
