package publish_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/publish"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

// The outbox sends what is signed to a relay (the real one, behind a proxy
// that goes away), and what was signed while the relay was away once it is
// back.
func TestOutboxDelivers(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.Options{})
	srv := httptest.NewUnstartedServer(nil)
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: quiet(),
		PublicURL: "http://" + srv.Listener.Addr().String(), ServicePub: pk, Name: "test"})
	srv.Config.Handler = rl
	relaytest.Serve(t, srv, rl, st)
	proxy := testkit.NewProxy(t, srv.Listener.Addr().String())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := publish.NewOutbox([]string{"ws://" + proxy.Addr()}, quiet())
	sk := nostr.GeneratePrivateKey()
	at := nostr.Now() - 100
	list := func(content string) *nostr.Event {
		at++
		ev := &nostr.Event{Kind: publish.KindMuteList, CreatedAt: at, Tags: nostr.Tags{}, Content: content}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	stored := func(want *nostr.Event) func() bool {
		return func() bool {
			for ev, err := range st.Events.Find(ctx, nostr.Filter{Kinds: []int{want.Kind}, Authors: []string{want.PubKey}}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.ID == want.ID {
					return true
				}
			}
			return false
		}
	}
	newest := list("newest")
	o.Send(newest)
	done := make(chan struct{})
	go func() { o.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testkit.WaitFor(t, 30*time.Second, "the list on the relay", stored(newest))

	proxy.Down()
	away := list("signed while the relay was away")
	o.Send(away)
	proxy.Up(t)
	testkit.WaitFor(t, 30*time.Second, "the list signed while away on the relay", stored(away))
}

// A relay that refuses an event (as strfry refuses one with too many tags)
// is told it again, later, until it takes it; meanwhile State names the
// relay, the event and the reason, and counts the refusals.
func TestOutboxRetriesRefusals(t *testing.T) {
	t.Parallel()
	st, url, refuse := refusingRelay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := publish.NewOutbox([]string{url}, quiet())
	clock := testkit.NewClock(time.Now())
	o.SetNow(clock.Now)
	ev := page(t, "outpost-bans-00")
	o.Send(ev)
	done := make(chan struct{})
	go func() { o.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testkit.WaitFor(t, 30*time.Second, "the refusal in the outbox's state", func() bool {
		s := o.State()[0]
		return s.Refused > 0 && len(s.Refusals) == 1
	})
	s := o.State()[0]
	if r := s.Refusals[0]; s.Relay != url || r.Kind != publish.KindBanPage || r.D != "outpost-bans-00" || r.Reason != "invalid: too many tags" || s.Published != 0 {
		t.Fatalf("state %+v", s)
	}
	refuse.Store(false)
	clock.Add(5 * time.Second) // the first back-off, on the outbox's clock
	o.Wake()
	testkit.WaitFor(t, 30*time.Second, "the page taken when tried again", func() bool {
		got, err := st.Events.Address(ctx, ev.Kind, ev.PubKey, "outpost-bans-00")
		return err == nil && got != nil && got.ID == ev.ID
	})
	testkit.WaitFor(t, 10*time.Second, "the state to say so", func() bool {
		s := o.State()[0]
		return s.Published == 1 && len(s.Refusals) == 0
	})
}

// refusingRelay is the real relay, refusing every event while refuse is
// set (it starts set), as strfry refuses an event with too many tags.
func refusingRelay(t *testing.T) (st *store.Store, url string, refuse *atomic.Bool) {
	t.Helper()
	st = storetest.Open(t, storetest.Options{})
	srv := httptest.NewUnstartedServer(nil)
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: quiet(),
		PublicURL: "http://" + srv.Listener.Addr().String(), ServicePub: pk, Name: "test"})
	refuse = &atomic.Bool{}
	refuse.Store(true)
	rl.RejectEvent = append(rl.RejectEvent, func(context.Context, *nostr.Event) (bool, string) {
		return refuse.Load(), "invalid: too many tags"
	})
	srv.Config.Handler = rl
	relaytest.Serve(t, srv, rl, st)
	return st, "ws://" + srv.Listener.Addr().String(), refuse
}

// page is a signed, empty list page at d.
func page(t *testing.T, d string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: publish.KindBanPage, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"d", d}}}
	if err := ev.Sign(nostr.GeneratePrivateKey()); err != nil {
		t.Fatal(err)
	}
	return ev
}

// A refused page of blocked words is in the ban list's health as a refused
// page of keys is; another addressable event the service signs (a mint's
// status) is not: it is not the list.
func TestBanListChecksNameEveryRefusedPage(t *testing.T) {
	t.Parallel()
	_, url, _ := refusingRelay(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := publish.NewOutbox([]string{url}, quiet())
	for _, d := range []string{"outpost-bans-00", "outpost-words-", "https://mint.example"} {
		o.Send(page(t, d))
	}
	done := make(chan struct{})
	go func() { o.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testkit.WaitFor(t, 30*time.Second, "the three refusals in the outbox's state", func() bool {
		return len(o.State()[0].Refusals) == 3
	})
	c := o.BanListChecks()[0]
	if c.Error == nil || !strings.Contains(*c.Error, "outpost-bans-00") || !strings.Contains(*c.Error, "outpost-words-") || strings.Contains(*c.Error, "mint.example") {
		t.Fatalf("the ban list's check of a relay refusing its pages: %+v (error %v)", c, c.Error)
	}
}

// Events signed before a restart are offered to a relay: it is sent those
// it lacks (found by halving the ids it is asked about) and none of those
// it holds.
func TestOutboxOffersWhatARelayLacks(t *testing.T) {
	t.Parallel()
	st, url, refuse := refusingRelay(t)
	refuse.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var offered []*nostr.Event
	var lacking []*nostr.Event
	for i := range 150 {
		ev := page(t, fmt.Sprint("outpost-bans-", i))
		offered = append(offered, ev)
		if i%3 == 0 { // many halves lacking all, next to halves holding some
			lacking = append(lacking, ev)
			continue
		}
		if _, err := st.Events.Save(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]string, len(offered))
	for i, ev := range offered {
		ids[i] = ev.ID
	}
	testkit.WaitFor(t, 10*time.Second, "the events saved to be counted", func() bool {
		n, err := st.Events.Count(ctx, []nostr.Filter{{IDs: ids}}, nil)
		return err == nil && int(n) == len(offered)-len(lacking)
	})
	o := publish.NewOutbox([]string{url}, quiet())
	for _, ev := range offered {
		o.Offer(ev)
	}
	done := make(chan struct{})
	go func() { o.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// Every offered event goes in the outbox's first batch (none is
	// refused), so once the relay took as many as it lacked, nothing more
	// of it is on the way.
	testkit.WaitFor(t, 30*time.Second, "the outbox to have sent what the relay lacked", func() bool {
		return o.State()[0].Published >= uint64(len(lacking))
	})
	testkit.WaitFor(t, 30*time.Second, "the relay to hold every offered event", func() bool {
		for _, ev := range lacking {
			if got, err := st.Events.Address(ctx, ev.Kind, ev.PubKey, ev.Tags.GetD()); err != nil || got == nil || got.ID != ev.ID {
				return false
			}
		}
		return true
	})
	if s := o.State()[0]; s.Published != uint64(len(lacking)) {
		t.Fatalf("%d events sent, want the %d the relay lacked", s.Published, len(lacking))
	}
}

// The outbox sends a relay several events before it reads their OKs: a
// relay that answers only once it holds a group of them (as a round trip
// per event would) gets every one, where one event at a time waited for
// an OK that never came.
func TestOutboxSendsAheadOfOKs(t *testing.T) {
	t.Parallel()
	const n = 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var up websocket.Upgrader
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		var ids []string
		for {
			var msg []json.RawMessage
			var ev nostr.Event
			if c.ReadJSON(&msg) != nil {
				return
			}
			if len(msg) == 2 && json.Unmarshal(msg[1], &ev) == nil {
				ids = append(ids, ev.ID)
			}
			if len(ids) < n {
				continue
			}
			for _, id := range ids {
				c.WriteJSON([]any{"OK", id, true, ""})
			}
			ids = nil
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := publish.NewOutbox([]string{"ws" + strings.TrimPrefix(srv.URL, "http")}, quiet())
	for i := range n {
		o.Send(page(t, fmt.Sprint("outpost-bans-", i)))
	}
	done := make(chan struct{})
	go func() { o.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testkit.WaitFor(t, 30*time.Second, "every event taken", func() bool { return o.State()[0].Published == n })
}
