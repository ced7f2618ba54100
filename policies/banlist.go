// Package policies offers khatru write policies backed by a ban list: reject
// events by banned authors and events containing blocked words. The ban list
// is an in-memory snapshot; outpost updates it on every change, and any other
// relay can keep one in sync with a remote outpost (see SyncBanList).
package policies

import (
	"encoding/hex"
	"sync"
	"sync/atomic"
)

// Ban is one active ban as the snapshot keeps it.
type Ban struct {
	PubKey    string // hex
	Reason    string
	ExpiresAt int64 // unix seconds; 0 = never
}

// banEntry is a ban as read from the set.
type banEntry struct {
	reason    string
	expiresAt int64
	msg       string // the reject message, built once so the check never allocates
}

// BanList is a concurrency-safe snapshot of active bans and blocked words,
// banned events, and the access lists of access.go. Expiry is evaluated when
// a ban is checked, so a temporary ban lapses on the second without any job
// running.
//
// Banned pubkeys and event ids are held as their 32 bytes, so a relay can
// check every event it reads (Hides) without encoding hex; the methods that
// take hex decode it, in either case. A "key" that is not 64 hex characters
// names no event or author, so it is never banned: banning it does nothing.
type BanList struct {
	mu      sync.RWMutex
	bans    banSet
	events  map[[32]byte]struct{} // ids of events hidden by a moderator
	words   atomic.Pointer[wordSet]
	version atomic.Uint64

	wordsMu    sync.Mutex // serializes changes of words and their rebuilds
	rebuilding bool       // a rebuildWords runs

	allowed         map[string]struct{} // authors on the allow list
	allowedKinds    map[int]struct{}
	disallowedKinds map[int]struct{}

	ipMu       sync.Mutex // serializes changes of ips
	ips        atomic.Pointer[ipSet]
	ipVersion  atomic.Uint64
	ipWatchers []func()
}

// NewBanList returns an empty ban list.
func NewBanList() *BanList {
	return &BanList{bans: newBanSet(), events: make(map[[32]byte]struct{}), allowed: make(map[string]struct{})}
}

// key decodes a 64-character hex pubkey or event id.
func key(s string) (k [32]byte, ok bool) {
	if len(s) != 64 {
		return k, false
	}
	_, err := hex.Decode(k[:], []byte(s))
	return k, err == nil
}

// Ban adds or replaces the ban of pubkey (hex).
func (l *BanList) Ban(b Ban) {
	pk, ok := key(b.PubKey)
	if !ok {
		return
	}
	l.mu.Lock()
	l.bans.put(pk, termsOf(b))
	l.mu.Unlock()
	l.version.Add(1)
}

// BanMany adds or replaces many bans at once.
func (l *BanList) BanMany(bans []Ban) {
	l.mu.Lock()
	for _, b := range bans {
		if pk, ok := key(b.PubKey); ok {
			l.bans.put(pk, termsOf(b))
		}
	}
	l.mu.Unlock()
	l.version.Add(1)
}

// Unban removes the ban of pubkey (hex), if any.
func (l *BanList) Unban(pubkey string) {
	pk, ok := key(pubkey)
	if !ok {
		return
	}
	l.mu.Lock()
	l.bans.remove(pk)
	l.mu.Unlock()
	l.version.Add(1)
}

// SetBans replaces every ban at once.
func (l *BanList) SetBans(bans []Ban) {
	set := newBanSet()
	for _, b := range bans {
		if pk, ok := key(b.PubKey); ok {
			set.put(pk, termsOf(b))
		}
	}
	l.mu.Lock()
	for i, n := range l.bans.changed { // every part changed, after every change seen before
		set.changed[i] = n + 1
	}
	l.bans = set
	l.mu.Unlock()
	l.version.Add(1)
}

// A whole list taken in pages (a follower's first sync, or another
// server's list) is applied page by page, not collected first: BeginBans,
// PutBans for each page, EndBans once the last is in. A ban held before and
// named again by the new list is enforced throughout; the bans the new
// list does not name are lifted by EndBans only, all at once. A resync
// that never ends (its fetch failed) leaves what was held, with what it
// put; the next BeginBans starts over.

// BeginBans starts taking a whole list (Mirror).
func (l *BanList) BeginBans() {
	l.mu.Lock()
	l.bans.beginResync()
	l.mu.Unlock()
}

// Resyncing reports whether a whole list is being taken (BeginBans, and no
// EndBans yet): what is held is then part the old list, part the new.
func (l *BanList) Resyncing() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.bans.resyncing
}

// PutBans puts a page of the whole list being taken (Mirror): BanMany.
func (l *BanList) PutBans(bans []Ban) { l.BanMany(bans) }

// Keep marks the bans of these keys (hex), held as they are, as named by
// the whole list being taken: one who applies its pages otherwise (a
// store that keeps this list) says so of the bans it did not put again.
func (l *BanList) Keep(pubkeys []string) {
	l.mu.Lock()
	for _, s := range pubkeys {
		if pk, ok := key(s); ok {
			l.bans.keep(pk)
		}
	}
	l.mu.Unlock()
}

// EndResync ends the whole list being taken, returning the keys (hex) of
// the active bans it did not name, for the caller to lift.
func (l *BanList) EndResync() []string {
	l.mu.Lock()
	unnamed := l.bans.endResync()
	l.mu.Unlock()
	out := make([]string, len(unnamed))
	for i, pk := range unnamed {
		out[i] = hex.EncodeToString(pk[:])
	}
	return out
}

// EndBans ends the whole list being taken (Mirror), lifting at once the
// bans it did not name.
func (l *BanList) EndBans() {
	l.mu.Lock()
	for _, pk := range l.bans.endResync() {
		l.bans.remove(pk)
	}
	l.mu.Unlock()
	l.version.Add(1)
}

// SetWords replaces the blocked words. Words are matched in the normal form
// of NormalizeText; words with the same normal form count once.
func (l *BanList) SetWords(words []string) {
	set := fullSet(words)
	l.wordsMu.Lock()
	l.words.Store(set)
	l.version.Add(1)
	l.wordsMu.Unlock()
}

func termsOf(b Ban) banTerms { return banTerms{reason: b.Reason, expiresAt: b.ExpiresAt} }

// Banned reports whether pubkey (hex) has a ban active at now (unix seconds).
func (l *BanList) Banned(pubkey string, now int64) (Ban, bool) {
	e, ok := l.lookup(pubkey, now)
	if !ok {
		return Ban{}, false
	}
	return Ban{PubKey: pubkey, Reason: e.reason, ExpiresAt: e.expiresAt}, true
}

func (l *BanList) lookup(pubkey string, now int64) (banEntry, bool) {
	pk, ok := key(pubkey)
	if !ok {
		return banEntry{}, false
	}
	l.mu.RLock()
	e, ok := l.bans.get(pk)
	l.mu.RUnlock()
	if !ok || !e.activeAt(now) {
		return banEntry{}, false
	}
	return e, true
}

func (e banEntry) activeAt(now int64) bool { return e.expiresAt == 0 || e.expiresAt > now }

// Hides reports whether readers are kept from the event with this id by
// this author (both raw): the author has a ban active at now, or the event
// was banned. A relay asks it of every stored event it reads.
func (l *BanList) Hides(id, pubkey [32]byte, now int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if e, ok := l.bans.get(pubkey); ok && e.activeAt(now) {
		return true
	}
	_, ok := l.events[id]
	return ok
}

// BlockedWord returns the first blocked word found in text.
func (l *BanList) BlockedWord(text string) (string, bool) {
	return l.words.Load().find(text)
}

// BlockedWordIn returns the first blocked word found in any of texts, all
// looked through in one pass.
func (l *BanList) BlockedWordIn(texts ...string) (string, bool) {
	return l.words.Load().find(texts...)
}

// Bans lists the bans active at now, sorted by pubkey, and the earliest time
// at which one of them expires (0 if none does): a cache of the list is valid
// until then or until Version changes. It copies the whole list: readers of
// a long one take it in parts (Page, BansIn, EachBan).
func (l *BanList) Bans(now int64) (bans []Ban, nextExpiry int64) {
	l.mu.RLock()
	bans = make([]Ban, 0, l.bans.active.len())
	l.mu.RUnlock()
	err := l.EachBan(now, func(b Ban) error {
		if b.ExpiresAt != 0 && (nextExpiry == 0 || b.ExpiresAt < nextExpiry) {
			nextExpiry = b.ExpiresAt
		}
		bans = append(bans, b)
		return nil
	})
	_ = err // f never fails
	return bans, nextExpiry
}

// EachBan calls f with each ban held active at now, in order of key, until
// f fails, without copying the list: for writing it out. It holds the
// list's read lock throughout, so f must not change the list, and changes
// wait for it.
func (l *BanList) EachBan(now int64, f func(Ban) error) (err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.bans.active.all(func(pk *[32]byte, v *uint32) bool {
		if e := l.bans.entry(*v); e.activeAt(now) {
			err = f(Ban{PubKey: hex.EncodeToString(pk[:]), Reason: e.reason, ExpiresAt: e.expiresAt})
		}
		return err == nil
	})
	return err
}

// Page lists up to limit bans active at now, in order of key, from the
// first key (hex) after after ("": from the first); next is the after of
// the page that follows ("" when none does). A page costs its size, not
// the list's, and holds the list's read lock only while it is copied.
func (l *BanList) Page(after string, limit int, now int64) (bans []Ban, next string) {
	var from [32]byte
	if after != "" {
		var ok bool
		if from, ok = key(after); !ok {
			return nil, ""
		}
	}
	bans = make([]Ban, 0, min(limit, 1024))
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.bans.active.ascend(from, after == "", func(pk *[32]byte, v *uint32) bool {
		e := l.bans.entry(*v)
		if !e.activeAt(now) {
			return true
		}
		if len(bans) == limit { // one more follows
			next = bans[limit-1].PubKey
			return false
		}
		bans = append(bans, Ban{PubKey: hex.EncodeToString(pk[:]), Reason: e.reason, ExpiresAt: e.expiresAt})
		return true
	})
	return bans, next
}

// BansIn lists the bans active at now whose key's first byte is first, in
// order of key, and the earliest time one of them lapses (0: none does).
func (l *BanList) BansIn(first byte, now int64) (bans []Ban, nextExpiry int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.bans.active.ascend([32]byte{first}, true, func(pk *[32]byte, v *uint32) bool {
		if pk[0] != first {
			return false
		}
		if e := l.bans.entry(*v); e.activeAt(now) {
			if e.expiresAt != 0 && (nextExpiry == 0 || e.expiresAt < nextExpiry) {
				nextExpiry = e.expiresAt
			}
			bans = append(bans, Ban{PubKey: hex.EncodeToString(pk[:]), Reason: e.reason, ExpiresAt: e.expiresAt})
		}
		return true
	})
	return bans, nextExpiry
}

// Changed copies into v how many times the bans of each first byte of key
// have changed: a part whose count moved must be read again (BansIn).
func (l *BanList) Changed(v *[256]uint64) {
	l.mu.RLock()
	*v = l.bans.changed
	l.mu.RUnlock()
}

// Words lists the blocked words as they were set.
func (l *BanList) Words() []string {
	m := l.words.Load()
	if m == nil {
		return []string{}
	}
	return append([]string{}, m.words...)
}

// BanEvent hides the event with this id (hex) and keeps it from being
// published again.
func (l *BanList) BanEvent(id string) {
	k, ok := key(id)
	if !ok {
		return
	}
	l.mu.Lock()
	l.events[k] = struct{}{}
	l.mu.Unlock()
}

// AllowEvent lifts an event ban: the event is served again.
func (l *BanList) AllowEvent(id string) {
	k, ok := key(id)
	if !ok {
		return
	}
	l.mu.Lock()
	delete(l.events, k)
	l.mu.Unlock()
}

// SetBannedEvents replaces the banned event ids (hex).
func (l *BanList) SetBannedEvents(ids []string) {
	m := make(map[[32]byte]struct{}, len(ids))
	for _, id := range ids {
		if k, ok := key(id); ok {
			m[k] = struct{}{}
		}
	}
	l.mu.Lock()
	l.events = m
	l.mu.Unlock()
}

// EventBanned reports whether the event id (hex) was banned.
func (l *BanList) EventBanned(id string) bool {
	k, ok := key(id)
	if !ok {
		return false
	}
	l.mu.RLock()
	_, ok = l.events[k]
	l.mu.RUnlock()
	return ok
}

// Version changes whenever a ban or the word list changes.
func (l *BanList) Version() uint64 { return l.version.Load() }

// Len is the number of bans held, including lapsed ones not yet removed.
func (l *BanList) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.bans.active.len() + len(l.bans.lapsed)
}

// ActiveBans counts the bans active at now without walking or copying the
// list (health checks ask it at any size): only bans lapsed since the last
// count are visited, once each.
func (l *BanList) ActiveBans(now int64) int {
	l.mu.RLock()
	n, due := l.bans.active.len(), l.bans.due(now)
	l.mu.RUnlock()
	if !due {
		return n
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bans.advance(now)
	return l.bans.active.len()
}

// WordCount is the number of blocked words, without copying them.
func (l *BanList) WordCount() int {
	if s := l.words.Load(); s != nil {
		return len(s.words)
	}
	return 0
}
