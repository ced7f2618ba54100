package upstream_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

var quiet = logger()

func logger() *slog.Logger {
	if os.Getenv("UPSTREAM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// node is an outpost relay (the real one, with the directory's NIP-87
// checks) on a fresh store, served on 127.0.0.1.
type node struct {
	rl   *relay.Relay
	st   *store.Store
	bans *policies.BanList
	ws   string // ws://127.0.0.1:port
	addr string
}

func newNode(t testing.TB) *node {
	t.Helper()
	st, err := store.Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	bans := policies.NewBanList()
	rl := relay.New(relay.Config{Store: st, BanList: bans, Log: quiet, PublicURL: url, ServicePub: pk, Name: "test"})
	rl.RejectEvent = append(rl.RejectEvent, mintdir.RejectInvalidNIP87)
	srv.Config.Handler = rl
	relaytest.Serve(t, srv, rl, st)
	return &node{rl: rl, st: st, bans: bans, ws: "ws://" + srv.Listener.Addr().String(), addr: srv.Listener.Addr().String()}
}

// put stores events on the node as if they had been published there long
// ago (skipping its policies: an upstream may hold what we refuse).
func (n *node) put(t *testing.T, evs ...nostr.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := n.rl.Publish(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
	}
}

func (n *node) count(t *testing.T, f nostr.Filter) int {
	t.Helper()
	c, err := n.st.Events.Count(context.Background(), []nostr.Filter{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return int(c)
}

func (n *node) has(t *testing.T, id string) bool {
	return n.count(t, nostr.Filter{IDs: []string{id}}) == 1
}

const mintURL = "https://mint.example.com"

// clock is the created_at of the last review made, shared by the tests
// that run in parallel.
var clock = func() *atomic.Int64 {
	var c atomic.Int64
	c.Store(time.Now().Add(-48 * time.Hour).Unix())
	return &c
}()

// review is a NIP-87 mint review; each call makes a distinct event.
func review(t testing.TB, sk string, rating int) nostr.Event {
	t.Helper()
	clock := nostr.Timestamp(clock.Add(1))
	ev := nostr.Event{Kind: 38000, CreatedAt: clock, Content: fmt.Sprintf("review %d", clock), Tags: nostr.Tags{
		{"k", "38172"}, {"d", mintURL}, {"u", mintURL}, {"rating", fmt.Sprint(rating)}}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func signed(t *testing.T, sk string, kind int, tags ...nostr.Tag) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(clock.Add(1)), Tags: tags}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func follow(t *testing.T, local *node, cfg upstream.Config) *upstream.Syncer {
	t.Helper()
	cfg.Events, cfg.Ingest, cfg.Log = local.st.Events, local.rl.Ingest, quiet
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 200 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	s := upstream.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

func relayHealth(t *testing.T, s *upstream.Syncer) upstream.RelayHealth {
	t.Helper()
	h := s.Health(context.Background())
	if len(h.Checks.Relays) != 1 {
		t.Fatalf("health lists %d relays", len(h.Checks.Relays))
	}
	return h.Checks.Relays[0]
}

var reviewsAndAnnouncements = nostr.Filter{Kinds: []int{38000, 38172}}

// TestSyncWithNegentropy: an outpost upstream speaks NIP-77; what it holds
// comes over, except what our checks refuse; what is published there later
// comes over live.
func TestSyncWithNegentropy(t *testing.T) {
	t.Parallel()
	up, local := newNode(t), newNode(t)
	banned := nostr.GeneratePrivateKey()
	bannedPK, _ := nostr.GetPublicKey(banned)
	local.bans.Ban(policies.Ban{PubKey: bannedPK, Reason: "spam"})

	var want []nostr.Event
	for range 30 {
		want = append(want, review(t, nostr.GeneratePrivateKey(), 4))
	}
	mintPK := strings.Repeat("02", 1) + strings.Repeat("ab", 32)
	want = append(want, signed(t, nostr.GeneratePrivateKey(), 38172, nostr.Tag{"d", mintPK}, nostr.Tag{"u", mintURL}))
	up.put(t, want...)
	fromBanned := review(t, banned, 1)
	badRating := signed(t, nostr.GeneratePrivateKey(), 38000, nostr.Tag{"k", "38172"}, nostr.Tag{"u", mintURL}, nostr.Tag{"rating", "11"})
	note := signed(t, nostr.GeneratePrivateKey(), 1)
	up.put(t, fromBanned, badRating, note)

	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Relays: []string{up.ws}}})
	testkit.WaitFor(t, 20*time.Second, "the reviews and the announcement", func() bool {
		return local.count(t, reviewsAndAnnouncements) == len(want)
	})
	for _, ev := range want {
		if !local.has(t, ev.ID) {
			t.Fatalf("event %s did not come over", ev.ID)
		}
	}
	for name, ev := range map[string]nostr.Event{"a banned key's review": fromBanned, "a review rated 11": badRating, "a kind-1 note": note} {
		if local.has(t, ev.ID) {
			t.Errorf("%s was stored", name)
		}
	}
	h := relayHealth(t, s)
	if h.Method == nil || *h.Method != "negentropy" || !h.Connected || h.LastSyncAt == nil {
		t.Fatalf("health: %+v", h)
	}
	if h.Events.Stored != int64(len(want)) || h.Events.Skipped != 2 {
		t.Fatalf("counters: %+v (want %d stored, 2 skipped)", h.Events, len(want))
	}

	later := review(t, nostr.GeneratePrivateKey(), 5)
	later.CreatedAt = nostr.Now()
	later.Sign(nostr.GeneratePrivateKey())
	up.put(t, later)
	testkit.WaitFor(t, 10*time.Second, "a review published upstream later to come over live", func() bool { return local.has(t, later.ID) })
}

// TestSyncWithREQ: a bare khatru relay without NIP-77 is caught up with
// REQ pages (more events than one page holds).
func TestSyncWithREQ(t *testing.T) {
	t.Parallel()
	db := &slicestore.SliceStore{}
	db.Init()
	k := khatru.NewRelay()
	k.StoreEvent = append(k.StoreEvent, db.SaveEvent)
	k.QueryEvents = append(k.QueryEvents, db.QueryEvents)
	const n = 700 // more than one page of 500
	ids := map[string]bool{}
	for range n {
		ev := review(t, nostr.GeneratePrivateKey(), 3)
		db.SaveEvent(context.Background(), &ev)
		ids[ev.ID] = true
	}
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	local := newNode(t)
	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Relays: []string{"ws" + strings.TrimPrefix(srv.URL, "http")}}})
	testkit.WaitFor(t, 90*time.Second, "every review", func() bool { return local.count(t, reviewsAndAnnouncements) == n })
	testkit.WaitFor(t, 5*time.Second, "the catch-up to be recorded", func() bool { return relayHealth(t, s).LastSyncAt != nil })
	if h := relayHealth(t, s); h.Method == nil || *h.Method != "req" || h.Events.Stored != n {
		t.Fatalf("health: %+v", h)
	}
}

// TestRelayGoesAwayAndComesBack: what was published upstream while the
// relay was unreachable is caught up once it is back.
func TestRelayGoesAwayAndComesBack(t *testing.T) {
	t.Parallel()
	up, local := newNode(t), newNode(t)
	first := review(t, nostr.GeneratePrivateKey(), 5)
	up.put(t, first)
	proxy := testkit.NewProxy(t, up.addr)
	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Relays: []string{"ws://" + proxy.Addr()}}})
	testkit.WaitFor(t, 10*time.Second, "the first review", func() bool { return local.has(t, first.ID) })

	proxy.Down()
	testkit.WaitFor(t, 10*time.Second, "the relay to be seen gone", func() bool { return !relayHealth(t, s).Connected })
	var missed []nostr.Event
	for range 5 {
		missed = append(missed, review(t, nostr.GeneratePrivateKey(), 2))
	}
	up.put(t, missed...)
	if h := relayHealth(t, s); h.LastError == nil {
		t.Fatalf("no error recorded: %+v", h)
	}
	proxy.Up(t)
	testkit.WaitFor(t, 20*time.Second, "the reviews published meanwhile", func() bool {
		for _, ev := range missed {
			if !local.has(t, ev.ID) {
				return false
			}
		}
		return true
	})
	if h := relayHealth(t, s); !h.Connected || h.Reconnects < 1 {
		t.Fatalf("health after reconnecting: %+v", h)
	}
}

// TestBudget: a relay that has more than its budget gets no more stored,
// and its state says until when it is paused.
func TestBudget(t *testing.T) {
	t.Parallel()
	up, local := newNode(t), newNode(t)
	for range 40 {
		up.put(t, review(t, nostr.GeneratePrivateKey(), 1))
	}
	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Relays: []string{up.ws}, RelayBudget: 10, Budget: 1000}})
	// Out of budget, the syncer hangs up and stays away until the pause
	// ends: nothing can come in after that.
	testkit.WaitFor(t, 10*time.Second, "the budget to run out and the relay to be left", func() bool {
		h := relayHealth(t, s)
		return h.Events.Dropped > 0 && !h.Connected
	})
	if got := local.count(t, reviewsAndAnnouncements); got != 10 {
		t.Fatalf("stored %d events, want the budget of 10", got)
	}
	if h := relayHealth(t, s); h.PausedUntil == nil || h.Events.Stored != 10 {
		t.Fatalf("health: %+v", h)
	}
}

// TestHostileRelay: a relay that ignores NIP-77 with a NOTICE and answers
// REQs with forged, unrequested and valid events; only the valid one is
// stored, the rest counted.
func TestHostileRelay(t *testing.T) {
	t.Parallel()
	good := review(t, nostr.GeneratePrivateKey(), 5)
	forged := review(t, nostr.GeneratePrivateKey(), 5)
	forged.Content = "changed after signing"
	unasked := signed(t, nostr.GeneratePrivateKey(), 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var up websocket.Upgrader
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			if strings.HasPrefix(string(data), `["NEG-OPEN"`) { // a relay without NIP-77
				c.WriteMessage(websocket.TextMessage, []byte(`["NOTICE","unknown message type"]`))
				continue
			}
			msg, _ := nostr.NewMessageParser().ParseMessage(string(data))
			if env, ok := msg.(*nostr.ReqEnvelope); ok {
				for _, ev := range []nostr.Event{good, forged, unasked} {
					b, _ := nostr.EventEnvelope{SubscriptionID: &env.SubscriptionID, Event: ev}.MarshalJSON()
					c.WriteMessage(websocket.TextMessage, b)
				}
				c.WriteMessage(websocket.TextMessage, []byte(`["EOSE","`+env.SubscriptionID+`"]`))
			}
		}
	}))
	t.Cleanup(srv.Close)
	local := newNode(t)
	s := follow(t, local, upstream.Config{Settings: upstream.Settings{Relays: []string{"ws" + strings.TrimPrefix(srv.URL, "http")}}})
	testkit.WaitFor(t, 10*time.Second, "the catch-up", func() bool { return relayHealth(t, s).LastSyncAt != nil })
	if !local.has(t, good.ID) || local.has(t, forged.ID) || local.has(t, unasked.ID) {
		t.Fatalf("stored: good %v, forged %v, unasked %v", local.has(t, good.ID), local.has(t, forged.ID), local.has(t, unasked.ID))
	}
	if h := relayHealth(t, s); h.Events.Stored != 1 || h.Events.Skipped < 2 || *h.Method != "req" {
		t.Fatalf("health: %+v", h)
	}
}
