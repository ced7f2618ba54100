// Package policies offers khatru write policies backed by a ban list: reject
// events by banned authors and events containing blocked words. The ban list
// is an in-memory snapshot; outpost updates it on every change, and any other
// relay can keep one in sync with a remote outpost (see SyncBanList).
package policies

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// Ban is one active ban as the snapshot keeps it.
type Ban struct {
	PubKey    string // hex
	Reason    string
	ExpiresAt int64 // unix seconds; 0 = never
}

type banEntry struct {
	reason    string
	expiresAt int64
	msg       string // the reject message, built once so the check never allocates
}

// BanList is a concurrency-safe snapshot of active bans and blocked words,
// banned events, and the access lists of access.go. Expiry is evaluated when
// a ban is checked, so a temporary ban lapses on the second without any job
// running.
type BanList struct {
	mu      sync.RWMutex
	bans    map[string]banEntry
	events  map[string]struct{} // ids of events hidden by a moderator
	words   atomic.Pointer[wordMatcher]
	version atomic.Uint64

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
	return &BanList{bans: make(map[string]banEntry), events: make(map[string]struct{}), allowed: make(map[string]struct{})}
}

// Ban adds or replaces the ban of pubkey (hex).
func (l *BanList) Ban(b Ban) {
	l.mu.Lock()
	l.bans[b.PubKey] = entryFor(b)
	l.mu.Unlock()
	l.version.Add(1)
}

// Unban removes the ban of pubkey (hex), if any.
func (l *BanList) Unban(pubkey string) {
	l.mu.Lock()
	delete(l.bans, pubkey)
	l.mu.Unlock()
	l.version.Add(1)
}

// SetBans replaces every ban at once.
func (l *BanList) SetBans(bans []Ban) {
	m := make(map[string]banEntry, len(bans))
	for _, b := range bans {
		m[b.PubKey] = entryFor(b)
	}
	l.mu.Lock()
	l.bans = m
	l.mu.Unlock()
	l.version.Add(1)
}

// SetWords replaces the blocked words. Words are matched in the normal form
// of NormalizeText; words with the same normal form count once.
func (l *BanList) SetWords(words []string) {
	l.words.Store(newWordMatcher(words))
	l.version.Add(1)
}

func entryFor(b Ban) banEntry {
	msg := "blocked: you are banned from this relay"
	if b.Reason != "" {
		msg += ": " + b.Reason
	}
	return banEntry{reason: b.Reason, expiresAt: b.ExpiresAt, msg: msg}
}

// Banned reports whether pubkey (hex) has a ban active at now (unix seconds).
func (l *BanList) Banned(pubkey string, now int64) (Ban, bool) {
	e, ok := l.lookup(pubkey, now)
	if !ok {
		return Ban{}, false
	}
	return Ban{PubKey: pubkey, Reason: e.reason, ExpiresAt: e.expiresAt}, true
}

func (l *BanList) lookup(pubkey string, now int64) (banEntry, bool) {
	l.mu.RLock()
	e, ok := l.bans[pubkey]
	l.mu.RUnlock()
	if !ok || (e.expiresAt != 0 && e.expiresAt <= now) {
		return banEntry{}, false
	}
	return e, true
}

// BlockedWord returns the first blocked word found in text.
func (l *BanList) BlockedWord(text string) (string, bool) {
	return l.words.Load().find(text)
}

// Bans lists the bans active at now, sorted by pubkey, and the earliest time
// at which one of them expires (0 if none does): a cache of the list is valid
// until then or until Version changes.
func (l *BanList) Bans(now int64) (bans []Ban, nextExpiry int64) {
	l.mu.RLock()
	bans = make([]Ban, 0, len(l.bans))
	for pk, e := range l.bans {
		if e.expiresAt != 0 && e.expiresAt <= now {
			continue
		}
		if e.expiresAt != 0 && (nextExpiry == 0 || e.expiresAt < nextExpiry) {
			nextExpiry = e.expiresAt
		}
		bans = append(bans, Ban{PubKey: pk, Reason: e.reason, ExpiresAt: e.expiresAt})
	}
	l.mu.RUnlock()
	slices.SortFunc(bans, func(a, b Ban) int { return cmp.Compare(a.PubKey, b.PubKey) })
	return bans, nextExpiry
}

// Words lists the blocked words as they were set.
func (l *BanList) Words() []string {
	m := l.words.Load()
	if m == nil {
		return []string{}
	}
	return slices.Clone(m.words)
}

// BanEvent hides the event with this id and keeps it from being published again.
func (l *BanList) BanEvent(id string) {
	l.mu.Lock()
	l.events[id] = struct{}{}
	l.mu.Unlock()
}

// AllowEvent lifts an event ban: the event is served again.
func (l *BanList) AllowEvent(id string) {
	l.mu.Lock()
	delete(l.events, id)
	l.mu.Unlock()
}

// SetBannedEvents replaces the banned event ids.
func (l *BanList) SetBannedEvents(ids []string) {
	m := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	l.mu.Lock()
	l.events = m
	l.mu.Unlock()
}

// EventBanned reports whether the event id was banned.
func (l *BanList) EventBanned(id string) bool {
	l.mu.RLock()
	_, ok := l.events[id]
	l.mu.RUnlock()
	return ok
}

// Version changes whenever a ban or the word list changes.
func (l *BanList) Version() uint64 { return l.version.Load() }

// Len is the number of bans held, including lapsed ones not yet removed.
func (l *BanList) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.bans)
}
