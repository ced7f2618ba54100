package mintdir

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// OnChange hears of every stored change of a mint's record, after it is
// stored: a check, another monitor's status, a review (a new summary); a
// status event of a monitor not followed changes nothing and is not told.
func TestOnChange(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var told []string
	a, stranger := newMonitor(), newMonitor()
	var e *env
	e = newEnv(t, Config{Settings: Settings{Monitors: []string{a.pk}}, OnChange: func(id string) {
		if _, err := e.dir.Get(e.ctx, id); err != nil { // stored already
			t.Errorf("told of %s, which reads: %v", id, err)
		}
		mu.Lock()
		told = append(told, id)
		mu.Unlock()
	}})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(told) }
	f := newFakeMint(t, "Watched", pk1)
	id := e.submit(f.URL)
	if n := count(); n != 0 {
		t.Fatalf("told %d times of a mint never checked", n)
	}
	e.probe(id)
	after := count()
	if after == 0 {
		t.Fatal("a check was not told")
	}
	e.clock.Add(time.Minute)
	e.save(stranger.status(t, f.URL, StatusOffline, e.clock.Now()))
	if n := count(); n != after {
		t.Fatalf("an unfollowed monitor's status was told (%d, was %d)", n, after)
	}
	e.save(a.status(t, f.URL, StatusOffline, e.clock.Now()))
	if n := count(); n != after+1 {
		t.Fatalf("a followed monitor's status: told %d times, want %d", n, after+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(told, func(s string) bool { return s != id }) {
		t.Fatalf("told %v, want only %s", told, id)
	}
}
