package policies

// Held is pubkey's ban as held, lapsed or not (it says whether a ban that
// no longer applies lapsed or was lifted: a lifted one is gone).
func (l *BanList) Held(pubkey string) (Ban, bool) {
	l.mu.RLock()
	e, ok := l.bans[pubkey]
	l.mu.RUnlock()
	return Ban{PubKey: pubkey, Reason: e.reason, ExpiresAt: e.expiresAt}, ok
}

// Lapsed lists the held bans whose expiry is in (from, to].
func (l *BanList) Lapsed(from, to int64) []Ban {
	var out []Ban
	l.mu.RLock()
	defer l.mu.RUnlock()
	for pk, e := range l.bans {
		if e.expiresAt > from && e.expiresAt <= to {
			out = append(out, Ban{PubKey: pk, Reason: e.reason, ExpiresAt: e.expiresAt})
		}
	}
	return out
}
