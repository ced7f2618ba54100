package publish_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/nostr/publish"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/mintdir"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// statusEnv is a real directory on a real store, checking a real mint
// behind a proxy that can go down, and its status publisher, whose sink
// stores every event it is given and hands it to the test.
type statusEnv struct {
	t       *testing.T
	ctx     context.Context
	st      *store.Store
	clock   *testkit.Clock
	ticks   *testkit.Ticker
	dir     *mintdir.Directory
	pub     *publish.Mints
	events  chan *nostr.Event
	mintURL string
	proxy   *testkit.Proxy
}

const serviceKey = "7f1a5b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeef"

func newStatusEnv(t *testing.T) *statusEnv {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	mint := minttest.Start(t, devmint.Options{})
	e := &statusEnv{t: t, ctx: ctx, st: storetest.Open(t, storetest.Options{}),
		clock:  testkit.NewClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)),
		events: make(chan *nostr.Event, 100), proxy: testkit.NewProxy(t, strings.TrimPrefix(mint.URL, "http://"))}
	e.mintURL = "http://" + e.proxy.Addr()
	e.pub = e.publisher()
	e.dir = mintdir.New(mintdir.Config{Settings: mintdir.Settings{ProbeTimeout: 2 * time.Second, AllowPrivate: true},
		DB: e.st.DB, Events: e.st.Events, Log: quiet(), Now: e.clock.Now, OnChange: func(id string) { e.pub.Changed(id) }})
	return e
}

// publisher is a status publisher of the env's directory (e.dir, read
// when it runs); start runs it until the test or stop ends it.
func (e *statusEnv) publisher() *publish.Mints {
	e.ticks = &testkit.Ticker{}
	return &publish.Mints{Events: e.st.Events, SecretKey: serviceKey, Log: quiet(), Now: e.clock.Now, Tick: e.ticks.Start,
		Sink: func(ctx context.Context, ev *nostr.Event) error {
			if _, err := e.st.Events.Save(ctx, ev); err != nil {
				return err
			}
			e.events <- ev
			return nil
		}}
}

func (e *statusEnv) start() (stop func()) {
	e.pub.Directory = e.dir
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { e.pub.Run(ctx); close(done) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	e.t.Cleanup(stop)
	return stop
}

// next is the next event published, which must be of kind.
func (e *statusEnv) next(kind int) *nostr.Event {
	e.t.Helper()
	select {
	case ev := <-e.events:
		if ev.Kind != kind {
			e.t.Fatalf("published kind %d (%v), want %d", ev.Kind, ev.Tags, kind)
		}
		return ev
	case <-e.ctx.Done():
		e.t.Fatalf("nothing published, waiting for kind %d", kind)
		return nil
	}
}

// none checks that nothing more was published. Two refresh ticks are the
// barrier: the second is taken only once the first is handled, and a
// refresh first takes the changes the directory told of before it.
func (e *statusEnv) none() {
	e.t.Helper()
	for range 2 {
		if err := e.ticks.Tick(e.ctx, e.clock.Now()); err != nil {
			e.t.Fatal(err)
		}
	}
	select {
	case ev := <-e.events:
		e.t.Fatalf("published kind %d %v, want nothing", ev.Kind, ev.Tags)
	default:
	}
}

// check runs one round of checks, d after the last.
func (e *statusEnv) check(d time.Duration) {
	e.clock.Add(d)
	if n := e.dir.ProbeAll(e.ctx); n != 1 {
		e.t.Fatalf("%d mints checked, want 1", n)
	}
}

// goOffline takes the mint down for the three failed checks that make it
// offline, and returns the event that says so (others may come first).
func (e *statusEnv) goOffline() *nostr.Event {
	e.proxy.Down()
	for range 3 {
		e.check(5 * time.Minute)
	}
	for {
		if ev := e.next(publish.KindMintStatus); status(ev) == mintdir.StatusOffline {
			return ev
		}
	}
}

func status(ev *nostr.Event) string { return ev.Tags.Find("status")[1] }

// The directory tells the publisher what changed: a check that moves a
// mint's status gets its event signed at once, without a tick of the
// publisher's own; one that moves nothing gets none, until the event is an
// hour old.
func TestMintStatusFollowsTheDirectory(t *testing.T) {
	t.Parallel()
	e := newStatusEnv(t)
	e.start()
	e.next(publish.KindMintMonitor)
	if _, err := e.dir.Submit(e.ctx, e.mintURL); err != nil {
		t.Fatal(err)
	}
	e.check(0)
	if ev := e.next(publish.KindMintStatus); status(ev) != mintdir.StatusOnline || ev.Tags.GetD() != e.mintURL {
		t.Fatalf("first status %v", ev.Tags)
	}
	e.check(5 * time.Minute)
	e.none()

	ev := e.goOffline()
	if ev.Tags.Find("offline_since") == nil {
		t.Fatalf("offline without offline_since: %v", ev.Tags)
	}

	// Unchecked for more than Refresh: the refresh republishes it, once.
	e.clock.Add(61 * time.Minute)
	if err := e.ticks.Tick(e.ctx, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if again := e.next(publish.KindMintStatus); status(again) != mintdir.StatusOffline || again.CreatedAt <= ev.CreatedAt {
		t.Fatalf("refreshed %v at %d after %d", again.Tags, again.CreatedAt, ev.CreatedAt)
	}
	e.none()
}

// A restarted publisher reads what it published from the store and signs
// nothing that would say the same; the first change after is published.
func TestMintStatusRestart(t *testing.T) {
	t.Parallel()
	e := newStatusEnv(t)
	stop := e.start()
	e.next(publish.KindMintMonitor)
	if _, err := e.dir.Submit(e.ctx, e.mintURL); err != nil {
		t.Fatal(err)
	}
	e.check(0)
	e.next(publish.KindMintStatus)
	stop()

	e.pub = e.publisher()
	e.start()
	e.check(5 * time.Minute) // told before the new publisher has read the catalogue, or after
	e.none()
	e.goOffline()
}

// TestAuditTags: a mint the audits tested carries them in its status
// event; one they did not (audits off) carries none.
func TestAuditTags(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	rate := 0.75
	m := &mintdir.Mint{CanonicalURL: "https://m.example"}
	for _, tag := range publish.StatusTags(m) {
		if strings.Contains(tag[0], "audit") {
			t.Fatalf("an unaudited mint has %v", tag)
		}
	}
	m.Summary.Audits = mintdir.AuditSummary{Audits30d: 4, SuccessRate30d: &rate, LastAuditAt: &at, LastAuditFailureAt: &at}
	tags := publish.StatusTags(m)
	for _, want := range []nostr.Tag{{"audit", "30d", "4", "0.75"}, {"last_audit", "1700000000"}, {"last_audit_failure", "1700000000"}} {
		if got := tags.Find(want[0]); !slices.Equal(got, want) {
			t.Errorf("tag %v: got %v", want, got)
		}
	}
}
