package policies

import (
	"runtime"
	"testing"
)

// TestActiveBansCountsLapses: the count health checks read follows bans
// as they lapse, are replaced or lifted, and lapsed bans stay held for
// the changes feed.
func TestActiveBansCountsLapses(t *testing.T) {
	l := NewBanList()
	l.Ban(Ban{PubKey: pk(1), Reason: "spam"})
	l.Ban(Ban{PubKey: pk(2), Reason: "spam", ExpiresAt: 100})
	l.Ban(Ban{PubKey: pk(3), Reason: "spam", ExpiresAt: 200})
	l.Ban(Ban{PubKey: pk(4), Reason: "flood", ExpiresAt: 100})
	l.Ban(Ban{PubKey: pk(4), Reason: "flood", ExpiresAt: 300}) // replaced: its old expiry is stale
	l.Ban(Ban{PubKey: pk(5), Reason: "flood", ExpiresAt: 100})
	l.Unban(pk(5))
	steps := []struct {
		now  int64
		want int
	}{{50, 4}, {100, 3}, {150, 3}, {200, 2}, {300, 1}}
	for _, s := range steps {
		if got := l.ActiveBans(s.now); got != s.want {
			t.Errorf("ActiveBans(%d) = %d, want %d", s.now, got, s.want)
		}
		if got := countActive(l, s.now); got != s.want {
			t.Errorf("Bans(%d) has %d, want %d", s.now, got, s.want)
		}
	}
	if _, ok := l.Banned(pk(2), 99); !ok {
		t.Error("a ban seen to lapse is not one before its expiry")
	}
	if b, ok := l.Held(pk(3)); !ok || b.ExpiresAt != 200 {
		t.Errorf("lapsed ban not held: %+v %v", b, ok)
	}
	if got := l.Lapsed(150, 300); len(got) != 2 {
		t.Errorf("Lapsed(150, 300) = %v, want pk 3 and 4", got)
	}
	if l.Len() != 4 {
		t.Errorf("Len = %d, want 4 (one permanent, three lapsed)", l.Len())
	}
	l.Ban(Ban{PubKey: pk(2), Reason: "again"})
	if got := l.ActiveBans(300); got != 2 {
		t.Errorf("re-banning a lapsed key: ActiveBans = %d, want 2", got)
	}
}

func countActive(l *BanList, now int64) int {
	bans, _ := l.Bans(now)
	return len(bans)
}

// TestTermsShared: bans that share a reason and expiry share one record,
// freed when the last of them goes.
func TestTermsShared(t *testing.T) {
	l := NewBanList()
	for i := range 100 {
		l.Ban(Ban{PubKey: pk(i + 1), Reason: "wave"})
	}
	if n := len(l.bans.terms.index); n != 1 {
		t.Fatalf("%d term records for one reason", n)
	}
	if msg, ok := l.BannedMessage(pk(7), 0); !ok || msg != "blocked: you are banned from this relay: wave" {
		t.Errorf("message %q %v", msg, ok)
	}
	for i := range 100 {
		l.Unban(pk(i + 1))
	}
	if n := len(l.bans.terms.index); n != 0 {
		t.Errorf("%d term records left with no ban", n)
	}
}

// TestBanMemory measures what a ban costs the set: a million must fit in
// a small part of the 256 MiB budget, so at most 80 bytes each (a map of
// structs with a message per ban took about 170).
func TestBanMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100k bans")
	}
	const n = 100_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = pk(i + 1)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := NewBanList()
	for _, k := range keys {
		l.Ban(Ban{PubKey: k, Reason: "spam wave"})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("%.1f bytes a ban", per)
	if per > 80 {
		t.Errorf("%.1f bytes a ban, want at most 80", per)
	}
	runtime.KeepAlive(l)
	runtime.KeepAlive(keys)
}
