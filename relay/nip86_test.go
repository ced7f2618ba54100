package relay_test

// NIP-86 relay management, over the wire: each method called by a NIP-86
// client (relaytest.Admin signs as nak does), its answer, and its effect
// on what the relay accepts and serves over the websocket.

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/relay/relaytest"
)

func (e *env) manager() relaytest.Admin { return relaytest.Admin{URL: e.url, SecretKey: e.admin} }

// call makes a NIP-86 call that must succeed and returns its result. The
// same call twice in one second is the same NIP-98 event, refused as a
// replay; so, as a client must, it waits for the next second then.
func (e *env) call(t *testing.T, method string, params ...any) any {
	t.Helper()
	key, _ := json.Marshal(append([]any{method}, params...))
	if e.calls == nil {
		e.calls = map[string]nostr.Timestamp{}
	}
	if e.calls[string(key)] == nostr.Now() {
		time.Sleep(time.Until(time.Unix(int64(nostr.Now())+1, 0)))
	}
	e.calls[string(key)] = nostr.Now()
	r, err := e.manager().Call(method, params...)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.Error != "" {
		t.Fatalf("%s %v: %d %s", method, params, r.Status, r.Raw)
	}
	return r.Result
}

// refused makes a NIP-86 call that must fail with status and an error.
func (e *env) refused(t *testing.T, a relaytest.Admin, status int, method string, params ...any) relaytest.Reply {
	t.Helper()
	r, err := a.Call(method, params...)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != status || r.Error == "" || r.Result != nil {
		t.Fatalf("%s %v: %d %s, want %d with an error and no result", method, params, r.Status, r.Raw, status)
	}
	return r
}

// A token is good for 60 seconds either way, as the README says; older or
// newer ones are 401 with a JSON error, and nothing happens.
func TestNIP86TimeWindow(t *testing.T) {
	e := newEnv(t)
	at := func(offset nostr.Timestamp) relaytest.Admin {
		a := e.manager()
		a.Sign = func(ev *nostr.Event) string { ev.CreatedAt += offset; return "" }
		return a
	}
	for _, offset := range []nostr.Timestamp{-50, 50} {
		_, pk := newKey()
		r, err := at(offset).Call("banpubkey", pk, "spam")
		if err != nil || r.Status != 200 || r.Result != true {
			t.Fatalf("a token %ds off: %d %s %v", offset, r.Status, r.Raw, err)
		}
	}
	for _, offset := range []nostr.Timestamp{-70, 70} {
		_, pk := newKey()
		r := e.refused(t, at(offset), 401, "banpubkey", pk, "spam")
		if _, banned := e.svc.Status(pk); banned {
			t.Fatalf("a token %ds off banned the key: %s", offset, r.Raw)
		}
	}
}

// banevent hides an event from REQ and COUNT without deleting it;
// allowevent serves it again.
func TestNIP86BanEventHides(t *testing.T) {
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, pk := newKey()
	a, b := sign(t, sk, 1, "a"), sign(t, sk, 1, "b")
	w.mustPublish(a, b)
	mine := object{"authors": []string{pk}}

	e.call(t, "banevent", a.ID, "illegal")
	if got := w.req("r", mine); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("after banevent: %v, want only %s", got, b.ID)
	}
	if n := w.count("c", mine); n != 1 {
		t.Fatalf("after banevent counted %d, want 1", n)
	}
	if ok, reason := w.publish(a); ok {
		t.Fatalf("a banned event was accepted again: %s", reason)
	}
	banned := e.call(t, "listbannedevents")
	if j, _ := json.Marshal(banned); string(j) != `[{"id":"`+a.ID+`","reason":"illegal"}]` {
		t.Fatalf("listbannedevents = %s", j)
	}

	e.call(t, "allowevent", a.ID, "reviewed")
	if got := w.req("r", mine); len(got) != 2 || !slices.Contains(got, a.ID) {
		t.Fatalf("after allowevent: %v, want both", got)
	}
	if banned := e.call(t, "listbannedevents"); len(banned.([]any)) != 0 {
		t.Fatalf("listbannedevents after allowevent = %v", banned)
	}
}
