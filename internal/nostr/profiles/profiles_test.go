package profiles_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

func signAt(t *testing.T, sk string, kind int, content string, at time.Time) nostr.Event {
	t.Helper()
	ev := nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()), Content: content, Tags: nostr.Tags{}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func publish(t *testing.T, srv *httptest.Server, evs ...nostr.Event) {
	t.Helper()
	c, p := relaytest.Dial(t, srv.URL)
	t.Cleanup(p.Freeze)
	for _, ev := range evs {
		if err := relaytest.Publish(t, c, ev); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
}

func TestLocalAndRemote(t *testing.T) {
	t.Parallel()
	local, localStore := relaytest.Start(t)
	remote, _ := relaytest.Start(t)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	now := time.Now()
	old := signAt(t, sk, 0, `{"name":"old","lud16":"old@example.com"}`, now.Add(-time.Hour))
	publish(t, local, old, signAt(t, sk, 1, "hello", now.Add(-48*time.Hour)))
	newer := signAt(t, sk, 0, `{"name":"alice","display_name":"Alice","picture":"https://p.example/a.png","nip05":"Alice@Example.com","lud16":" Alice@Pay.Example.com "}`, now.Add(-time.Minute))
	ancient := signAt(t, sk, 1, "first post", now.Add(-30*24*time.Hour))
	publish(t, remote, newer, ancient, signAt(t, nostr.GeneratePrivateKey(), 0, `{"name":"someone else"}`, now))

	f := &profiles.Fetcher{Local: localStore.Events}
	res := f.Fetch(context.Background(), pk, time.Time{})
	if res.Profile == nil || res.Profile.Name != "old" || res.FirstSeenAt != now.Add(-48*time.Hour).Unix() {
		t.Fatalf("local only: %+v %+v", res, res.Profile)
	}

	f.Relays = []string{"ws" + strings.TrimPrefix(remote.URL, "http")}
	res = f.Fetch(context.Background(), pk, now.Add(-14*24*time.Hour))
	want := profiles.Profile{Name: "alice", DisplayName: "Alice", Picture: "https://p.example/a.png",
		NIP05: "alice@example.com", LUD16: "alice@pay.example.com", EventID: newer.ID, CreatedAt: int64(newer.CreatedAt)}
	if res.Profile == nil || *res.Profile != want {
		t.Fatalf("profile %+v, want the newest one, from the remote relay: %+v", res.Profile, want)
	}
	if res.FirstSeenAt != int64(ancient.CreatedAt) || len(res.Failed) != 0 {
		t.Fatalf("first seen %d (failed %v), want the remote relay's oldest event %d", res.FirstSeenAt, res.Failed, ancient.CreatedAt)
	}
}

// A relay that lies, babbles and never sends EOSE costs at most the
// timeout, and nothing it says unsigned is believed.
func TestHostileRelay(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	good := signAt(t, sk, 0, `{"name":"real"}`, time.Now().Add(-time.Hour))
	forged := signAt(t, sk, 0, `{"name":"real"}`, time.Now())
	forged.Content = `{"name":"forged","lud16":"thief@example.com"}` // id and sig no longer match
	reid := forged
	reid.ID = reid.GetID() // matching id, stale signature
	future := signAt(t, sk, 0, `{"name":"from the future"}`, time.Now().Add(24*time.Hour))
	other := signAt(t, nostr.GeneratePrivateKey(), 0, `{"name":"other"}`, time.Now())
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var up websocket.Upgrader
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.ReadMessage()
		send := func(v any) {
			b, _ := json.Marshal(v)
			c.WriteMessage(websocket.TextMessage, b)
		}
		c.WriteMessage(websocket.TextMessage, []byte(`not json at all`))
		c.WriteMessage(websocket.TextMessage, []byte(`["EVENT"`))
		send([]any{"NOTICE", "hi"})
		send([]any{"EVENT", "another-sub", good})
		for _, ev := range []nostr.Event{forged, reid, future, other, good} {
			send([]any{"EVENT", "outpost-profile", ev})
		}
		<-r.Context().Done() // and never EOSE
	}))
	defer hostile.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "ws://" + closed.Addr().String()
	closed.Close()

	f := &profiles.Fetcher{Relays: []string{"ws" + strings.TrimPrefix(hostile.URL, "http"), deadURL}, Timeout: 500 * time.Millisecond}
	start := time.Now()
	res := f.Fetch(context.Background(), pk, time.Time{})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("fetch took %v with a 500ms timeout", d)
	}
	if res.Profile == nil || res.Profile.Name != "real" || res.Profile.EventID != good.ID {
		t.Fatalf("profile %+v, want the one validly signed event", res.Profile)
	}
	if len(res.Failed) != 2 {
		t.Fatalf("failed relays %v, want both", res.Failed)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	sk := nostr.GeneratePrivateKey()
	for content, want := range map[string]*profiles.Profile{
		`{"name":"a","lud16":42,"displayName":"A"}`:                   {Name: "a", DisplayName: "A"},
		`{"name":"` + strings.Repeat("x", 300) + `","lud16":"b@c.d"}`: {LUD16: "b@c.d"},
		`[1,2]`:    nil,
		`not json`: nil,
		`{}`:       {},
	} {
		ev := signAt(t, sk, 0, content, time.Now())
		got, ok := profiles.Parse(&ev)
		if want == nil {
			if ok {
				t.Errorf("Parse(%.30q) accepted", content)
			}
			continue
		}
		want.EventID, want.CreatedAt = ev.ID, int64(ev.CreatedAt)
		if !ok || *got != *want {
			t.Errorf("Parse(%.30q) = %+v, want %+v", content, got, want)
		}
	}
}
