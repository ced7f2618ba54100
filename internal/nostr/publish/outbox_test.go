package publish_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/publish"
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
