package policies

import (
	"encoding/hex"

	"github.com/nbd-wtf/go-nostr"
)

// Held is pubkey's ban as held, lapsed or not (it says whether a ban that
// no longer applies lapsed or was lifted: a lifted one is gone).
func (l *BanList) Held(pubkey string) (Ban, bool) {
	pk, ok := key(pubkey)
	if !ok {
		return Ban{}, false
	}
	l.mu.RLock()
	e, ok := l.bans.get(pk)
	l.mu.RUnlock()
	return Ban{PubKey: pubkey, Reason: e.reason, ExpiresAt: e.expiresAt}, ok
}

// Lapsed lists the held bans whose expiry is in (from, to]. Those lapsed
// by to are moved aside first, so only they are looked through, not the list.
func (l *BanList) Lapsed(from, to int64) []Ban {
	var out []Ban
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bans.advance(to)
	for pk, i := range l.bans.lapsed {
		if e := l.bans.entry(i); e.expiresAt > from && e.expiresAt <= to {
			out = append(out, Ban{PubKey: hex.EncodeToString(pk[:]), Reason: e.reason, ExpiresAt: e.expiresAt})
		}
	}
	return out
}

// BannedMessage is the refusal of an event by pubkey at now (unix seconds),
// if pubkey has an active ban then; it does not allocate.
func (l *BanList) BannedMessage(pubkey string, now int64) (string, bool) {
	e, ok := l.lookup(pubkey, now)
	return e.msg, ok
}

// BlockedMessage is the refusal of an event whose content (for kind 0, any
// profile field) holds a blocked word.
func (l *BanList) BlockedMessage(ev *nostr.Event) (string, bool) {
	if w, ok := blockedIn(l, ev); ok {
		return `blocked: contains the blocked word "` + w + `"`, true
	}
	return "", false
}
