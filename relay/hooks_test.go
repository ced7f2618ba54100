package relay_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/relay"
)

// A Relay exposes only what it honours: it embeds nothing (it embedded a
// khatru.Relay, whose RejectFilter, OnConnect, PreventBroadcast, Router and
// the rest outpost's own loop never consulted), and its exported fields are
// the hooks its admission runs (TestServiceHooks).
func TestRelayExposesOnlyWhatItHonours(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[relay.Relay]()
	var exported []string
	for f := range typ.Fields() {
		if f.Anonymous {
			t.Errorf("relay.Relay embeds %s: its hooks and methods would look honoured", f.Type)
		}
		if f.IsExported() {
			exported = append(exported, f.Name)
		}
	}
	if want := []string{"RejectEvent", "OnEventSaved"}; !slices.Equal(exported, want) {
		t.Errorf("exported fields %v, want %v", exported, want)
	}
	for _, m := range []string{"AddEvent", "BroadcastEvent", "Router", "HandleWebsocket", "HandleNIP11"} {
		if _, ok := reflect.TypeFor[*relay.Relay]().MethodByName(m); ok {
			t.Errorf("relay.Relay has khatru's %s", m)
		}
	}
}

// The services' hooks run in the one admission: RejectEvent for every event
// from a client or another relay (the first refusal is the answer, in
// NIP-01's words), never for the service's own; OnEventSaved once for each
// such event stored, never for a duplicate, an older version of an
// address, an ephemeral event, or the service's own.
func TestServiceHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var saved []string
	e.rl.RejectEvent = append(e.rl.RejectEvent,
		func(_ context.Context, ev *nostr.Event) (bool, string) {
			switch ev.Content {
			case "plain":
				return true, "not here"
			case "silent":
				return true, ""
			case "members":
				return true, "restricted: members only"
			}
			return false, ""
		},
		func(_ context.Context, ev *nostr.Event) (bool, string) {
			return ev.Content == "second", "the second hook"
		})
	e.rl.OnEventSaved = append(e.rl.OnEventSaved, func(_ context.Context, ev *nostr.Event) {
		mu.Lock()
		defer mu.Unlock()
		saved = append(saved, ev.Content)
	})
	w := dialWire(t, e.url, 0)
	sk, _ := newKey()
	for content, want := range map[string]string{
		"plain":   "blocked: not here",
		"silent":  "blocked: no reason",
		"members": "restricted: members only",
		"second":  "blocked: the second hook",
	} {
		ev := sign(t, sk, 1, content)
		if ok, reason := w.publish(ev); ok || reason != want {
			t.Errorf("client, %q: %v %q, want false %q", content, ok, reason, want)
		}
		if ok, reason := e.rl.Ingest(context.Background(), &ev); ok || reason != want {
			t.Errorf("upstream, %q: %v %q, want false %q", content, ok, reason, want)
		}
	}

	profile := sign(t, sk, 0, "client")
	w.mustPublish(profile, sign(t, sk, 20001, "ephemeral"))
	if ok, reason := w.publish(profile); !ok || !strings.HasPrefix(reason, "duplicate:") {
		t.Fatalf("again: %v %q", ok, reason)
	}
	if ok, _ := w.publish(signAt(t, sk, profile.CreatedAt-1, 0, "older")); ok {
		t.Fatal("an older profile was taken")
	}
	up := sign(t, sk, 1, "upstream")
	if ok, reason := e.rl.Ingest(context.Background(), &up); !ok || reason != "" {
		t.Fatalf("Ingest: %v %q", ok, reason)
	}
	own := sign(t, sk, 1, "plain") // the service's own: no policy refuses it
	if err := e.rl.Publish(context.Background(), &own); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if err := e.rl.Publish(context.Background(), &own); !errors.Is(err, eventstore.ErrDupEvent) {
		t.Fatalf("Publish again: %v", err)
	}
	older := signAt(t, sk, profile.CreatedAt-2, 0, "service, older")
	if err := e.rl.Publish(context.Background(), &older); !errors.Is(err, relay.ErrSuperseded) {
		t.Fatalf("Publish of an older profile: %v, want ErrSuperseded", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"client", "upstream"}; !slices.Equal(saved, want) {
		t.Fatalf("OnEventSaved told of %q, want %q", saved, want)
	}
}

// What the relay does not serve is a 404 in the JSON error contract, with
// CORS, and a browser's preflight for NIP-86 is allowed.
func TestNotServedAndPreflight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req, _ := http.NewRequest("OPTIONS", e.url+"/", nil)
	req.Header.Set("Origin", "https://admin.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 || resp.Header.Get("Access-Control-Allow-Origin") == "" ||
		!strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = http.Post(e.url+"/nothing", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("not served: %d %v", resp.StatusCode, resp.Header)
	}
}
