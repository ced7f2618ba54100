package strfry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/internal/nostr/strfry"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
)

// newPrimary is an outpost's ban list (the real service and API) served at
// the root of a test server on 127.0.0.1, on a clock the test moves.
func newPrimary(t testing.TB, log *slog.Logger) (*banlist.Service, *testkit.Clock, http.Handler) {
	st := storetest.Open(t, storetest.Options{Log: log})
	clock := testkit.NewClock(time.Now().Truncate(time.Second))
	svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: policies.NewBanList(),
		SecretKey: nostr.GeneratePrivateKey(), Log: log, Now: clock.Now,
		Publish: func(ctx context.Context, ev *nostr.Event) error { _, err := st.Events.Save(ctx, ev); return err }})
	if err != nil {
		t.Fatal(err)
	}
	return svc, clock, banlistapi.Routes(banlistapi.Config{Service: svc, Log: log, Now: clock.Now})
}

func banNew(t *testing.T, svc *banlist.Service) string {
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	if _, err := svc.Ban(context.Background(), "cli", pk, "spam", nil); err != nil {
		t.Fatal(err)
	}
	return pk
}

// The plugin, following an outpost whose URL another outpost now answers,
// takes the new one's whole list and keeps it in its cache: the old one's
// bans gone, the new one's earlier bans there.
func TestPluginMeetsAnotherPrimary(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, aClock, aRoutes := newPrimary(t, log)
	b, bClock, bRoutes := newPrimary(t, log)
	early := banNew(t, b)
	aClock.Add(time.Minute) // a's cursors are later than b's early ban
	stale := banNew(t, a)
	var target atomic.Pointer[http.Handler]
	target.Store(&aRoutes)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*target.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)

	cache := filepath.Join(t.TempDir(), "cache.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	in, stdin := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- strfry.Run(ctx, strfry.Options{From: srv.URL, Cache: cache, Interval: 20 * time.Millisecond, Log: log}, in, io.Discard)
	}()
	t.Cleanup(func() { cancel(); stdin.Close(); <-done })
	cached := func() *policies.BanList {
		l := policies.NewBanList()
		if _, err := strfry.LoadCache(l, cache); err != nil && !os.IsNotExist(err) {
			return policies.NewBanList() // being replaced
		}
		return l
	}
	testkit.WaitFor(t, 20*time.Second, "a's ban in the cache", func() bool { _, ok := cached().Banned(stale, 0); return ok })

	target.Store(&bRoutes)
	bClock.Add(2 * time.Minute)
	later := banNew(t, b)
	testkit.WaitFor(t, 20*time.Second, "b's list in the cache", func() bool {
		l := cached()
		_, okEarly := l.Banned(early, 0)
		_, okLater := l.Banned(later, 0)
		_, okStale := l.Banned(stale, 0)
		return okEarly && okLater && !okStale
	})
}
