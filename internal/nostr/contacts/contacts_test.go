package contacts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/contacts"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/internal/wot"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// local is outpost's side: its real relay on a store of its own, and the
// web of trust every contact list it saves goes to, fed by a Fetcher.
type local struct {
	rl       *relay.Relay
	st       *store.Store
	w        *wot.WoT
	ingested atomic.Int64 // events the Fetcher handed to the relay
}

func newLocal(t *testing.T, seed string, relays []string, budget contacts.Settings) *local {
	t.Helper()
	return newLocalWaiting(t, seed, relays, budget, 2*time.Second)
}

// newLocalWaiting is newLocal whose fetcher gives up on a relay that sends
// no end of stored events after timeout.
func newLocalWaiting(t *testing.T, seed string, relays []string, budget contacts.Settings, timeout time.Duration) *local {
	t.Helper()
	st, err := store.Open(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	l := &local{st: st, rl: relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: quiet, PublicURL: "http://127.0.0.1:1", ServicePub: pk})}
	if l.w, err = wot.New(wot.Config{Settings: wot.Settings{Seeds: []string{seed}}, DB: st.DB, Log: quiet}); err != nil {
		t.Fatal(err)
	}
	l.rl.OnEventSaved = append(l.rl.OnEventSaved, func(_ context.Context, ev *nostr.Event) {
		if err := l.w.Apply(ev); err != nil && ev.Kind == nostr.KindFollowList {
			t.Errorf("apply: %v", err)
		}
	})
	budget.Relays = relays
	// Reconnects 50 ms apart at first, not 1 s: a test of a relay that
	// hangs up waits for the reconnect.
	f := contacts.New(contacts.Config{Settings: budget, Authors: l.w.Walked, Log: quiet, Timeout: timeout, MinBackoff: 50 * time.Millisecond,
		Ingest: func(ctx context.Context, ev *nostr.Event) (bool, string) {
			l.ingested.Add(1)
			return l.rl.Ingest(ctx, ev)
		}})
	l.w.OnWalked(f.Changed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

func (l *local) hops(pk string) int { return l.w.StandingOf(pk).Hops }

// upstream is another outpost relay on 127.0.0.1 holding lists.
func upstream(t *testing.T) (ws string, put func(sk string, at nostr.Timestamp, follows ...string)) {
	srv, _ := relaytest.Start(t)
	ws = "ws" + srv.URL[len("http"):]
	r, _ := relaytest.Dial(t, ws)
	return ws, func(sk string, at nostr.Timestamp, follows ...string) {
		t.Helper()
		ev := list(t, sk, at, follows...)
		if err := relaytest.Publish(t, r, ev); err != nil {
			t.Fatal(err)
		}
	}
}

func list(t *testing.T, sk string, at nostr.Timestamp, follows ...string) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: nostr.KindFollowList, CreatedAt: at}
	for _, pk := range follows {
		ev.Tags = append(ev.Tags, nostr.Tag{"p", pk})
	}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestHopByHopThenLive: the seed's list is fetched, then — the walk having
// reached alice — alice's, so bob stands at hop 2; lists published upstream
// afterwards arrive live: the seed follows carol, then drops alice, and
// alice (and bob behind her) lose their standing.
func TestHopByHopThenLive(t *testing.T) {
	t.Parallel()
	seedSK, seed := relaytest.NewKey()
	aliceSK, alice := relaytest.NewKey()
	_, bob := relaytest.NewKey()
	_, carol := relaytest.NewKey()
	ws, put := upstream(t)
	now := nostr.Now()
	put(seedSK, now-10, alice)
	put(aliceSK, now-10, bob)

	l := newLocal(t, seed, []string{ws}, contacts.Settings{})
	testkit.WaitFor(t, 30*time.Second, "bob at hop 2", func() bool { return l.hops(bob) == 2 })
	put(seedSK, now-5, alice, carol)
	testkit.WaitFor(t, 30*time.Second, "carol at hop 1, live", func() bool { return l.hops(carol) == 1 })
	put(seedSK, now, carol)
	testkit.WaitFor(t, 30*time.Second, "alice gone, live", func() bool { return l.hops(alice) == -1 && l.hops(bob) == -1 })
}

// fake is a hostile relay: answer says what it sends for each REQ, on the
// connection's one goroutine; closes counts the CLOSEs it was sent.
type fake struct {
	srv    *httptest.Server
	gone   atomic.Int64 // connections that ended
	closes atomic.Int64
}

func newFake(t *testing.T, answer func(c *websocket.Conn, sub string, f nostr.Filter)) *fake {
	t.Helper()
	fk := &fake{}
	up := websocket.Upgrader{}
	fk.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer fk.gone.Add(1)
		defer c.Close()
		for {
			var msg []json.RawMessage
			if c.ReadJSON(&msg) != nil {
				return
			}
			var label, sub string
			if len(msg) < 2 || json.Unmarshal(msg[0], &label) != nil || json.Unmarshal(msg[1], &sub) != nil {
				continue
			}
			var f nostr.Filter
			switch {
			case label == "CLOSE":
				fk.closes.Add(1)
			case label == "REQ" && len(msg) > 2 && f.UnmarshalJSON(msg[2]) == nil:
				answer(c, sub, f)
			}
		}
	}))
	t.Cleanup(func() { fk.srv.CloseClientConnections(); fk.srv.Close() })
	return fk
}

func (fk *fake) ws() string { return "ws" + fk.srv.URL[len("http"):] }

// TestRelayThatNeverEnds: one relay never sends EOSE (it trickles events
// no filter asked for, so an idle timeout would never fire), another hangs
// without a word. The good relay's lists still make the web of trust, and
// the hostile ones are hung up on and tried again: their requests have a
// deadline they cannot stretch.
func TestRelayThatNeverEnds(t *testing.T) {
	t.Parallel()
	seedSK, seed := relaytest.NewKey()
	_, alice := relaytest.NewKey()
	otherSK, _ := relaytest.NewKey()
	ws, put := upstream(t)
	put(seedSK, nostr.Now(), alice)
	trickle := newFake(t, func(c *websocket.Conn, sub string, f nostr.Filter) {
		if !f.LimitZero { // a fetch, not the live subscription
			for range 10_000 {
				if c.WriteJSON([]any{"EVENT", sub, list(t, otherSK, nostr.Now())}) != nil {
					return
				}
				time.Sleep(50 * time.Millisecond) // the hostile relay trickles: its pacing is the fault
			}
		}
	})
	silent := newFake(t, func(*websocket.Conn, string, nostr.Filter) {})

	// 1 s, not 2: the hostile relays' fetches wait it out (the good one's
	// is asked again should it run out under load).
	l := newLocalWaiting(t, seed, []string{trickle.ws(), silent.ws(), ws}, contacts.Settings{}, time.Second)
	testkit.WaitFor(t, 30*time.Second, "alice at hop 1", func() bool { return l.hops(alice) == 1 })
	testkit.WaitFor(t, 30*time.Second, "both hostile relays hung up on", func() bool {
		return trickle.gone.Load() >= 1 && silent.gone.Load() >= 1
	})
	if n := l.ingested.Load(); n > 3 {
		t.Fatalf("%d events taken in; the trickled lists were asked for by no filter", n)
	}
}

// TestRelayThatLies: asked for the seed's list, a relay sends garbage, a
// list by another key (validly signed), one claiming the seed's key under
// another's signature, and a note by the seed. None is stored or applied.
func TestRelayThatLies(t *testing.T) {
	t.Parallel()
	seedSK, seed := relaytest.NewKey()
	otherSK, _ := relaytest.NewKey()
	_, alice := relaytest.NewKey()
	forged := list(t, otherSK, nostr.Now(), alice)
	forged.PubKey = seed
	note := relaytest.Sign(t, seedSK, 1, "not a list")
	liar := newFake(t, func(c *websocket.Conn, sub string, f nostr.Filter) {
		if f.LimitZero {
			return
		}
		c.WriteMessage(websocket.TextMessage, []byte(`["EVENT", "`+sub+`", {"kind": 3, "pubkey": 12}`))
		c.WriteMessage(websocket.TextMessage, []byte(`not json at all`))
		for _, ev := range []nostr.Event{list(t, otherSK, nostr.Now(), alice), forged, note} {
			c.WriteJSON([]any{"EVENT", sub, ev})
		}
		c.WriteJSON([]any{"EOSE", sub})
	})
	l := newLocal(t, seed, []string{liar.ws()}, contacts.Settings{})
	// The fetch's CLOSE follows its EOSE, read after every event before it.
	testkit.WaitFor(t, 30*time.Second, "the liar's answer read", func() bool { return liar.closes.Load() >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := l.st.Events.Count(ctx, []nostr.Filter{{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || l.hops(alice) != -1 || l.w.Lists() != 0 {
		t.Fatalf("stored %d events, alice at hop %d, %d lists: the liar's events were taken", n, l.hops(alice), l.w.Lists())
	}
}

// TestRelayThatFloods: a relay that answers one request with thousands of
// lists is hung up on at its budget of messages a minute; no more than the
// budget is handed to the relay's checks.
func TestRelayThatFloods(t *testing.T) {
	t.Parallel()
	seedSK, seed := relaytest.NewKey()
	lists := make([]nostr.Event, 200)
	for i := range lists {
		lists[i] = list(t, seedSK, nostr.Now()-nostr.Timestamp(i))
	}
	flood := newFake(t, func(c *websocket.Conn, sub string, f nostr.Filter) {
		if f.LimitZero {
			return
		}
		for _, ev := range lists {
			if c.WriteJSON([]any{"EVENT", sub, ev}) != nil {
				return
			}
		}
	})
	l := newLocal(t, seed, []string{flood.ws()}, contacts.Settings{RelayEvents: 20})
	testkit.WaitFor(t, 30*time.Second, "the flooding relay hung up on", func() bool { return flood.gone.Load() >= 1 })
	if n := l.ingested.Load(); n > 20 {
		t.Fatalf("%d events taken in from a relay with a budget of 20 a minute", n)
	}
}

// TestRelayThatFloodsGarbage: a relay that answers with thousands of
// messages that are not relay messages at all, then its EOSE, is hung up
// on at its budget all the same: garbage costs what an event costs.
func TestRelayThatFloodsGarbage(t *testing.T) {
	t.Parallel()
	_, seed := relaytest.NewKey()
	flood := newFake(t, func(c *websocket.Conn, sub string, f nostr.Filter) {
		if f.LimitZero {
			return
		}
		for range 200 {
			if c.WriteMessage(websocket.TextMessage, []byte(`not json at all`)) != nil {
				return
			}
		}
		c.WriteJSON([]any{"EOSE", sub})
	})
	newLocal(t, seed, []string{flood.ws()}, contacts.Settings{RelayEvents: 20})
	testkit.WaitFor(t, 30*time.Second, "the relay flooding garbage hung up on", func() bool { return flood.gone.Load() >= 1 })
}

// TestListTooBig: one followed key's list is bigger than a relay message
// may be, which ends the connection whichever other lists the request asked
// for. The request is split until that key alone is left, and the key is
// asked no more of the relay: the other lists still arrive (alice's, so bob
// stands at hop 2).
func TestListTooBig(t *testing.T) {
	t.Parallel()
	seedSK, seed := relaytest.NewKey()
	aliceSK, alice := relaytest.NewKey()
	_, big := relaytest.NewKey()
	_, bob := relaytest.NewKey()
	lists := map[string]nostr.Event{seed: list(t, seedSK, nostr.Now(), alice, big), alice: list(t, aliceSK, nostr.Now(), bob)}
	huge := []byte(`["EVENT","x",{"content":"` + strings.Repeat("x", 2<<20) + `"}]`)
	relay := newFake(t, func(c *websocket.Conn, sub string, f nostr.Filter) {
		if f.LimitZero {
			return
		}
		if slices.Contains(f.Authors, big) { // first, so that the rest never arrives
			huge := bytes.Replace(huge, []byte(`"x"`), []byte(`"`+sub+`"`), 1)
			if c.WriteMessage(websocket.TextMessage, huge) != nil {
				return
			}
		}
		for _, a := range f.Authors {
			if ev, ok := lists[a]; ok {
				c.WriteJSON([]any{"EVENT", sub, ev})
			}
		}
		c.WriteJSON([]any{"EOSE", sub})
	})
	l := newLocal(t, seed, []string{relay.ws()}, contacts.Settings{})
	testkit.WaitFor(t, 60*time.Second, "bob at hop 2", func() bool { return l.hops(bob) == 2 })
}

// TestLiveAsksForNothingStored: the live subscription asks for no stored
// lists (limit 0; the fetches ask for those), so a relay does not send them
// a second time.
func TestLiveAsksForNothingStored(t *testing.T) {
	t.Parallel()
	_, seed := relaytest.NewKey()
	var live, stored atomic.Int64
	relay := newFake(t, func(c *websocket.Conn, sub string, f nostr.Filter) {
		if strings.HasPrefix(sub, "live-") {
			if live.Add(1); !f.LimitZero || f.Limit != 0 {
				stored.Add(1)
			}
			return
		}
		c.WriteJSON([]any{"EOSE", sub})
	})
	newLocal(t, seed, []string{relay.ws()}, contacts.Settings{})
	testkit.WaitFor(t, 30*time.Second, "a live subscription", func() bool { return live.Load() >= 1 })
	if n := stored.Load(); n != 0 {
		t.Fatalf("%d live subscriptions asked for stored lists", n)
	}
}
