// Package wot is outpost's web of trust: the follow graph of NIP-02 contact
// lists (kind 3), walked out from the operator's seeds, which the relay,
// the faucet, the directory and moderation all ask the same question: how
// far is this key from the seeds, how many members follow it, how much
// rank does it hold, and since when do we know it.
//
// The graph lives in memory in compact form (graph.go) and in the store as
// one record per contact list, so a restart loads it instead of fetching it
// again. A contact list applied changes hops and followers at once; rank,
// a personalised PageRank over the whole graph (compute.go says why that
// one), follows within a second or so (Run).
package wot

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Settings are the web of trust's operator settings.
type Settings struct {
	Seeds        []string      `flag:"wot-seeds" usage:"npubs (or hex public keys) the web of trust grows from, comma-separated (default: --admin-pubkeys); with none there is no web of trust and everything that would use it behaves as without"`
	Depth        int           `flag:"wot-depth" usage:"hops from the seeds the web of trust reaches: 1 is the seeds' follows, 2 their follows' follows"`
	MinFollowers int           `flag:"wot-min-followers" usage:"members at a smaller distance who must follow a key beyond hop 1 for it to be a member (the seeds' own follows need none)"`
	MaxFollows   int           `flag:"wot-max-follows" usage:"follows read from one contact list; the rest are ignored, so one list cannot take the graph's memory"`
	Publish      bool          `flag:"wot-publish" usage:"publish the members' standing as NIP-85 trusted assertions (kind 30382: rank 0-100, followers), signed by the service key, to this relay and --publish-relays: what changed, after each rank computation, at most every --wot-publish-pause"`
	PublishPause time.Duration `flag:"wot-publish-pause" usage:"the least time between two rounds of --wot-publish's assertions"`
}

// DefaultSettings are the defaults docs/configuration.md lists: wot-relay's
// reach, the seeds' follows and their follows. One follower is enough by
// default because the walk only goes on through members, so a sybil region
// behind an attack edge gets its entry at most, never the keys behind it;
// a second follower would also keep out most honest keys at hop 2 (in the
// generated graph of sybil_test.go, 57% of them have one follower there).
func DefaultSettings() Settings {
	return Settings{Depth: 2, MinFollowers: 1, MaxFollows: 10_000, PublishPause: 10 * time.Second}
}

// Valid checks the settings.
func (s *Settings) Valid() error {
	var errs []error
	if _, err := ParseKeys(s.Seeds); err != nil {
		errs = append(errs, settings.Errorf("wot-seeds", "%v", err))
	}
	if s.Depth < 1 || s.Depth > 6 {
		errs = append(errs, settings.Errorf("wot-depth", "must be between 1 and 6"))
	}
	if s.MinFollowers < 1 {
		errs = append(errs, settings.Errorf("wot-min-followers", "must be at least 1"))
	}
	if s.MaxFollows < 1 {
		errs = append(errs, settings.Errorf("wot-max-follows", "must be at least 1"))
	}
	if s.PublishPause <= 0 {
		errs = append(errs, settings.Errorf("wot-publish-pause", "must be positive, got %s", settings.FormatDuration(s.PublishPause)))
	}
	return errors.Join(errs...)
}

// ParseKey reads a npub or a 64-digit hex public key.
func ParseKey(s string) (Key, error) {
	var k Key
	if prefix, v, err := nip19.Decode(s); err == nil && prefix == "npub" {
		s, _ = v.(string)
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return k, fmt.Errorf("%q is not a npub or a hex public key", s)
	}
	return Key(b), nil
}

// ParseKeys reads a list of keys with ParseKey.
func ParseKeys(ss []string) ([]Key, error) {
	keys := make([]Key, 0, len(ss))
	for _, s := range ss {
		k, err := ParseKey(s)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// Standing is a key's place in the web of trust.
type Standing struct {
	// Hops from the nearest seed: 0 a seed, 1 a seed's follow; -1 when no
	// member's follows reach the key within the depth.
	Hops int `json:"hops"`
	// Followers are the members at a smaller distance who follow the key.
	Followers int `json:"followers"`
	// Rank is the key's personalised PageRank (ranks sum to 1 over the graph).
	Rank float64 `json:"rank"`
	// Member: within the depth and, beyond hop 1, enough followers.
	Member bool `json:"member"`
	// FirstSeen is when outpost first received an event of the key or the
	// web of trust first reached it (Unix seconds; 0 when never).
	FirstSeen int64 `json:"first_seen_at,omitempty"`
}

// WoT is the web of trust. Its lookups take no lock a writer holds for
// long: hops and followers are an immutable snapshot swapped in whole.
type WoT struct {
	db  *kv.DB
	cfg Settings
	log *slog.Logger
	now func() time.Time

	apply sync.Mutex   // one contact list stored and applied at a time, so the store and memory agree on the newest
	mu    sync.RWMutex // the graph, seeds and first-seen times
	g     *graph
	seeds []uint32
	seen  []uint32 // per id: FirstSeen, Unix seconds; 0 unknown
	noted map[Key]struct{}
	gen   uint64 // counts compactions, which give keys new ids (Rerank)

	events  Events // lists not held are read from here (hold.go)
	missing []bool // per id: needed, but no list found or the graph full
	full    bool   // the bound left lists out (hold.go)
	bounds  bounds

	walked   []uint32 // Walked's ids, as of the last walk
	onWalked atomic.Pointer[func()]

	snap   atomic.Pointer[snapshot]
	dirty  chan struct{} // rank needs computing again (Run)
	ranked chan struct{} // rank computed again (Publisher)
}

// snapshot is one walk's levels and the latest rank.
type snapshot struct {
	levels
	rank    []float32
	members int
	median  float32 // the median rank of the members (Weight)
}

// withRank is s with rank r, and the median member rank over both.
func (s snapshot) withRank(r []float32) *snapshot {
	s.rank = r
	var ranks []float32
	for id, m := range s.member {
		if m && id < len(r) {
			ranks = append(ranks, r[id])
		}
	}
	s.median = 0
	if len(ranks) > 0 {
		slices.Sort(ranks)
		s.median = ranks[len(ranks)/2]
	}
	return &s
}

// Config is what New takes.
type Config struct {
	Settings
	DB *kv.DB
	// Events is the relay's store, where the contact lists the graph does
	// not hold are read when their authors come within reach; nil: they
	// are fetched again instead (Walked).
	Events Events
	Log    *slog.Logger     // default: slog.Default()
	Now    func() time.Time // the clock of first-seen times; default: time.Now
}

// New makes the web of trust on the store, empty until Load; settings
// left zero take their defaults.
func New(c Config) (*WoT, error) {
	seeds, err := ParseKeys(c.Seeds)
	if err != nil {
		return nil, err
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	def := DefaultSettings()
	c.Depth, c.MinFollowers, c.MaxFollows = cmp.Or(c.Depth, def.Depth), cmp.Or(c.MinFollowers, def.MinFollowers), cmp.Or(c.MaxFollows, def.MaxFollows)
	w := &WoT{db: c.DB, cfg: c.Settings, log: c.Log, now: c.Now, g: newGraph(), noted: map[Key]struct{}{}, dirty: make(chan struct{}, 1),
		ranked: make(chan struct{}, 1), events: c.Events, bounds: defaultBounds}
	for _, s := range seeds {
		w.seeds = append(w.seeds, w.g.intern(s))
	}
	w.growSeen()
	w.snap.Store(&snapshot{})
	w.rewalk()
	return w, nil
}

// Enabled reports whether there are seeds: without, no key is a member and
// the users of the web of trust behave as if it were not there.
func (w *WoT) Enabled() bool { return len(w.seeds) > 0 }

// Standing looks k up.
func (w *WoT) Standing(k Key) Standing {
	w.mu.RLock()
	id, ok := w.g.lookup(k)
	var seen uint32
	if ok {
		seen = w.seen[id]
	}
	w.mu.RUnlock()
	st := Standing{Hops: -1, FirstSeen: int64(seen)}
	s := w.snap.Load()
	if ok && int(id) < len(s.hops) && s.hops[id] != unreached {
		st.Hops, st.Followers, st.Member = int(s.hops[id]), int(s.followers[id]), s.member[id]
	}
	if ok && int(id) < len(s.rank) {
		st.Rank = float64(s.rank[id])
	}
	return st
}

// StandingOf looks up a hex public key; one that is not a key stands
// nowhere.
func (w *WoT) StandingOf(pubkey string) Standing {
	k, err := ParseKey(pubkey)
	if err != nil {
		return Standing{Hops: -1}
	}
	return w.Standing(k)
}

// Lists counts the contact lists held.
func (w *WoT) Lists() int {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.lists()
}

func (w *WoT) lists() int {
	n := 0
	for _, o := range w.g.out {
		if o != nil {
			n++
		}
	}
	return n
}

// Weight is how much a key's say counts (a review, a report), from 0 to 1:
// 0 outside the web of trust; for a member, its rank over the median
// member's, at most 1. Half the members count fully; a member the walk
// barely reaches — an attack edge's target, whose rank is what one honest
// follow carries — counts in proportion; a key's own followers, sybils
// among them, add nothing it does not get through the seeds' walk. Until
// the first rank is computed members count fully.
func (w *WoT) Weight(pubkey string) float64 {
	st := w.StandingOf(pubkey)
	if !st.Member {
		return 0
	}
	median := w.snap.Load().median
	if median <= 0 {
		return 1
	}
	return min(1, st.Rank/float64(median))
}

// maxWalked bounds the keys Walked names: their contact lists are asked
// of other relays, 250 authors a filter.
const maxWalked = 10_000

// walkedIDs are the members whose follows the walk goes on through (hops
// short of the depth), the nearest first, at most maxWalked.
func (w *WoT) walkedIDs(l levels) []uint32 {
	var ids []uint32
	for d := 0; d < w.cfg.Depth; d++ {
		for id, h := range l.hops {
			if int(h) == d && l.member[id] && len(ids) < maxWalked {
				ids = append(ids, uint32(id))
			}
		}
	}
	return ids
}

// OnWalked sets fn to be told when Walked changed, so that the contact
// lists of the keys it names can be fetched: the web of trust grows hop by
// hop. fn must not block.
func (w *WoT) OnWalked(fn func()) { w.onWalked.Store(&fn) }

// Walked lists the keys (hex) whose contact lists make the web of trust:
// the seeds and the members short of the depth, the nearest first.
func (w *WoT) Walked(context.Context) []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]string, len(w.walked))
	for i, id := range w.walked {
		out[i] = hex.EncodeToString(w.g.keys[id][:])
	}
	return out
}

// Members counts the members.
func (w *WoT) Members() int { return w.snap.Load().members }

// Follows reports whether a follows b by a's contact list: the one held,
// else the one in the relay's store.
func (w *WoT) Follows(a, b Key) bool {
	follows, held, events := w.followsHeld(a, b)
	if held || events == nil {
		return follows
	}
	ev, err := events.Address(context.Background(), nostr.KindFollowList, hex.EncodeToString(a[:]), "")
	if err != nil || ev == nil {
		return false
	}
	l, _ := w.list(ev)
	return slices.Contains(l.Follows, b)
}

func (w *WoT) followsHeld(a, b Key) (follows, held bool, events Events) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	ia, ok := w.g.lookup(a)
	if !ok || w.g.out[ia] == nil {
		return false, false, w.events
	}
	ib, ok := w.g.lookup(b)
	if !ok {
		return false, true, nil
	}
	_, found := slices.BinarySearch(w.g.out[ia], ib)
	return found, true, nil
}

// FollowsOf is Follows of two hex public keys.
func (w *WoT) FollowsOf(a, b string) bool {
	ka, err := ParseKey(a)
	kb, err2 := ParseKey(b)
	return err == nil && err2 == nil && w.Follows(ka, kb)
}

// ErrNotContactList is Apply's answer to an event that is not a kind 3.
var ErrNotContactList = errors.New("wot: not a contact list")

// Apply takes a contact list (kind 3) whose signature the caller checked:
// it stores it, unless a newer list of its author is already held, and
// updates hops and followers before it returns.
func (w *WoT) Apply(ev *nostr.Event) error {
	if ev.Kind != nostr.KindFollowList {
		return ErrNotContactList
	}
	l, ok := w.list(ev)
	if !ok {
		return nil
	}
	return w.setLists([]List{l}, w.events != nil)
}

// list reads a contact list. One dated more than an hour ahead is left
// out (ok false): it would hold back every real list after it.
func (w *WoT) list(ev *nostr.Event) (l List, ok bool) {
	author, err := ParseKey(ev.PubKey)
	if err != nil || ev.Kind != nostr.KindFollowList || ev.CreatedAt > nostr.Timestamp(w.now().Add(time.Hour).Unix()) {
		return List{}, false
	}
	return List{Author: author, At: uint32(min(max(int64(ev.CreatedAt), 0), 1<<32-1)), Follows: w.follows(ev)}, true
}

// follows reads the p tags of a contact list, up to MaxFollows; a tag that
// is not a key is skipped, as clients do.
func (w *WoT) follows(ev *nostr.Event) []Key {
	var keys []Key
	for _, t := range ev.Tags {
		if len(keys) == w.cfg.MaxFollows {
			break
		}
		if len(t) < 2 || t[0] != "p" || len(t[1]) != 64 {
			continue
		}
		var k Key
		if _, err := hex.Decode(k[:], []byte(t[1])); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// List is a contact list: its author, created_at and follows.
type List struct {
	Author  Key
	At      uint32
	Follows []Key
}

// SetLists stores and applies lists, skipping any whose author has a newer
// list already. Only the lists the walk needs are held (hold.go): those of
// members short of the depth, at once, and any other of lists whose
// author they bring within reach; the rest are left to the relay's store.
func (w *WoT) SetLists(lists []List) error { return w.setLists(lists, false) }

// setLists is SetLists; saved says the relay's store holds the lists
// (Apply, which the relay calls once it saved the event), so that they are
// read from there after a restart and not written again as records of the
// web of trust's own: 32 bytes a follow, 260 MB for 200,000 lists, whose
// compaction made badger's heap the largest part of outpost's memory.
func (w *WoT) setLists(lists []List, saved bool) error {
	w.apply.Lock()
	defer w.apply.Unlock()
	held, pending := w.sortLists(lists)
	if len(held) == 0 {
		return nil // nothing the walk goes through changed, so nothing comes within reach
	}
	if !saved {
		if err := w.putLists(held); err != nil {
			return err
		}
	}
	w.mu.Lock()
	changed := false
	for _, l := range held {
		changed = w.g.set(l.Author, l.Follows, l.At) || changed
	}
	w.growSeen()
	w.tidy()
	w.mu.Unlock()
	if !changed {
		return nil
	}
	w.markDirty()
	return w.settle(context.Background(), pending, saved)
}

// sortLists parts lists into the newer lists of needed authors (the
// newest of each) and the others, by author.
func (w *WoT) sortLists(lists []List) (held []List, pending map[Key]List) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	s := w.snap.Load()
	pending = map[Key]List{}
	for _, l := range lists {
		if p, ok := pending[l.Author]; ok && p.At > l.At {
			continue
		}
		pending[l.Author] = l
	}
	for k, l := range pending {
		id, ok := w.g.lookup(k)
		if ok && w.needed(s, id) && (w.g.out[id] == nil || l.At >= w.g.at[id]) {
			held = append(held, l)
			delete(pending, k)
		}
	}
	return held, pending
}

func (w *WoT) growSeen() {
	if n := len(w.g.keys) - len(w.seen); n > 0 {
		w.seen = append(w.seen, make([]uint32, n)...)
	}
	if n := len(w.g.keys) - len(w.missing); n > 0 {
		w.missing = append(w.missing, make([]bool, n)...)
	}
}

func (w *WoT) markDirty() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

// rewalk walks the graph again and swaps the snapshot, keeping the latest
// rank; keys that became members for the first time are first seen now.
func (w *WoT) rewalk() {
	w.mu.Lock()
	l := w.g.walk(w.seeds, w.cfg.Depth, w.cfg.MinFollowers)
	now := uint32(w.now().Unix())
	var first []Key
	members := 0
	for id, m := range l.member {
		if !m {
			continue
		}
		members++
		if w.seen[id] == 0 {
			w.seen[id] = now
			first = append(first, w.g.keys[id])
		}
	}
	w.snap.Store(snapshot{levels: l, members: members}.withRank(w.snap.Load().rank))
	walked := w.walkedIDs(l)
	changed := !slices.Equal(walked, w.walked)
	w.walked = walked
	w.mu.Unlock()
	if fn := w.onWalked.Load(); changed && fn != nil {
		(*fn)()
	}
	if err := w.putSeen(first, now); err != nil {
		w.log.Warn("wot: first-seen times not stored", "keys", len(first), "err", err)
	}
}
