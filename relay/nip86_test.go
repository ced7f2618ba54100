package relay_test

// NIP-86 relay management, over the wire: each method called by a NIP-86
// client (relaytest.Admin signs as nak does), its answer, and its effect
// on what the relay accepts and serves over the websocket.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/relay"
)

func (e *env) manager() relaytest.Admin { return relaytest.Admin{URL: e.url, SecretKey: e.admin} }

// do makes a NIP-86 call. The same change twice in one second is the same
// NIP-98 event (the same id), refused as a replay; so, as a client must, it
// waits for the next second then. Calls whose auth events differ otherwise
// (another key, tags or kind) do not wait, nor do reads, which may come
// again (TestNIP86Refusals).
func (e *env) do(t *testing.T, a relaytest.Admin, method string, params ...any) relaytest.Reply {
	t.Helper()
	if e.calls == nil {
		e.calls = map[string]bool{}
	}
	read := strings.HasPrefix(method, "list") || method == "supportedmethods"
	if e.calls[a.EventID(method, params...)] && !read {
		testkit.Past(time.Unix(int64(nostr.Now())+1, 0))
	}
	e.calls[a.EventID(method, params...)] = true
	r, err := a.Call(method, params...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// call makes a NIP-86 call that must succeed and returns its result.
func (e *env) call(t *testing.T, method string, params ...any) any {
	t.Helper()
	r := e.do(t, e.manager(), method, params...)
	if r.Status != 200 || r.Error != "" {
		t.Fatalf("%s %v: %d %s", method, params, r.Status, r.Raw)
	}
	return r.Result
}

// refused makes a NIP-86 call that must fail with status and an error.
func (e *env) refused(t *testing.T, a relaytest.Admin, status int, method string, params ...any) relaytest.Reply {
	t.Helper()
	r := e.do(t, a, method, params...)
	if r.Status != status || r.Error == "" || r.Result != nil {
		t.Fatalf("%s %v: %d %s, want %d with an error and no result", method, params, r.Status, r.Raw, status)
	}
	return r
}

// A token is good for 60 seconds either way, as docs/banlist.md says; older or
// newer ones are 401 with a JSON error, and nothing happens.
func TestNIP86TimeWindow(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	sk, pk := newKey()
	e, w, a, b := twoNotes(t, sk)
	mine := object{"authors": []string{pk}}

	e.call(t, "banevent", a.ID, "illegal")
	if got := stored(w, mine); !slices.Equal(got, []string{b.ID}) {
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
	if got := stored(w, mine); len(got) != 2 || !slices.Contains(got, a.ID) {
		t.Fatalf("after allowevent: %v, want both", got)
	}
	if banned := e.call(t, "listbannedevents"); len(banned.([]any)) != 0 {
		t.Fatalf("listbannedevents after allowevent = %v", banned)
	}
}

// While a key is banned its stored events are served to no one — REQ by
// author or by id, COUNT — yet nothing is deleted: they are served again
// when the ban is lifted (unbanpubkey) or lapses on its own. A banned
// event likewise, until unbanevent.
func TestBansHideWithoutDeleting(t *testing.T) {
	t.Parallel()
	sk, pk := newKey()
	e, w, a, b := twoNotes(t, sk)
	both := []string{a.ID, b.ID}
	mine := object{"authors": []string{pk}}
	byID := object{"ids": both}
	served := func(want int) {
		t.Helper()
		if got := stored(w, mine); len(got) != want {
			t.Fatalf("REQ by author served %d events, want %d", len(got), want)
		}
		if got := stored(w, byID); len(got) != want {
			t.Fatalf("REQ by id served %d events, want %d", len(got), want)
		}
		if n := w.count("c", mine); n != int64(want) {
			t.Fatalf("COUNT %d, want %d", n, want)
		}
		if n := w.count("c", byID, object{"kinds": []int{1}, "authors": []string{pk}}); n != int64(want) {
			t.Fatalf("COUNT of two filters %d, want %d", n, want)
		}
	}
	kept := func() {
		t.Helper()
		n, err := e.st.Events.Count(context.Background(), []nostr.Filter{{IDs: both}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Fatalf("the store holds %d of the 2 events: a ban deleted some", n)
		}
	}
	served(2)

	e.call(t, "banpubkey", pk, "spam")
	served(0)
	kept()
	e.call(t, "unbanpubkey", pk)
	served(2)

	// A ban that ends on its own: no one acts when it lapses.
	until := time.Now().Unix() + 2
	if _, err := e.svc.Ban(context.Background(), "test", pk, "cool off", &until); err != nil {
		t.Fatal(err)
	}
	served(0)
	kept()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for w.count("c", mine) != 2 {
		select {
		case <-ctx.Done():
			t.Fatal("the events of a lapsed ban were never served again")
		case <-time.After(200 * time.Millisecond):
		}
	}
	served(2)

	e.call(t, "banevent", a.ID, "illegal")
	if got := stored(w, byID); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("REQ by id while a is banned: %v, want only b", got)
	}
	if n := w.count("c", object{"ids": []string{a.ID}}); n != 0 {
		t.Fatalf("a banned event counted: %d", n)
	}
	kept()
	e.call(t, "unbanevent", a.ID)
	served(2)
}

// stored is what a REQ gets before EOSE; the subscription is closed after.
func stored(w *wire, f object) []string {
	w.t.Helper()
	id := fmt.Sprint("q", time.Now().UnixNano())
	ids := w.req(id, f)
	w.send("CLOSE", id)
	return ids
}

// withClientIP lets a test say which address a connection comes from
// (X-Client-IP), as a trusted proxy's X-Forwarded-For would.
func withClientIP(c *relay.Config) {
	c.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Client-IP") }
}

func from(ip string) http.Header { return http.Header{"X-Client-IP": {ip}} }

// Who may call, and what a refusal looks like: always JSON, always with
// the status NIP-98 and HTTP give it, and never a change.
func TestNIP86Refusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, target := newKey()
	good := e.manager()
	stranger, _ := newKey()
	tests := []struct {
		name   string
		admin  relaytest.Admin
		status int
		check  string // details.check of a NIP-98 refusal
	}{
		// NIP-98 accepts any valid signature; NIP-86 leaves who may call to
		// the relay. A valid header of someone who is not an admin is
		// authenticated but not allowed: 403, not 401.
		{"signed by someone who is not an admin", relaytest.Admin{URL: e.url, SecretKey: stranger}, 403, ""},
		{"expired", signed(good, func(ev *nostr.Event) { ev.CreatedAt -= 61 }), 401, "created_at"},
		{"another relay's URL", signed(good, func(ev *nostr.Event) { ev.Tags[0][1] = "http://127.0.0.2:1" }), 401, "u"},
		{"a path of this relay", signed(good, func(ev *nostr.Event) { ev.Tags[0][1] = e.url + "/banlist" }), 401, "u"},
		{"method GET", signed(good, func(ev *nostr.Event) { ev.Tags[1][1] = "GET" }), 401, "method"},
		{"no payload tag", signed(good, func(ev *nostr.Event) { ev.Tags = ev.Tags[:2] }), 401, "payload"},
		{"kind 1", signed(good, func(ev *nostr.Event) { ev.Kind = 1 }), 401, "kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.refused(t, tt.admin, tt.status, "banpubkey", target, "spam")
			if tt.check != "" && r.Status == 401 {
				var body struct {
					Details map[string]any `json:"details"`
				}
				json.Unmarshal(r.Raw, &body)
				if body.Details["check"] != tt.check {
					t.Fatalf("refused by check %v, want %s: %s", body.Details["check"], tt.check, r.Raw)
				}
			}
			if _, banned := e.svc.Status(target); banned {
				t.Fatal("a refused call banned the key")
			}
		})
	}

	t.Run("no Authorization header", func(t *testing.T) {
		r, err := good.Send([]byte(`{"method":"supportedmethods","params":[]}`), "")
		if err != nil || r.Status != 401 || r.Error == "" {
			t.Fatalf("%d %s %v", r.Status, r.Raw, err)
		}
	})
	t.Run("a header used twice", func(t *testing.T) {
		body := []byte(`{"method":"banpubkey","params":["` + target + `","spam"]}`)
		auth, _ := good.Header(body)
		if r, err := good.Send(body, auth); err != nil || r.Status != 200 {
			t.Fatalf("first use: %d %s %v", r.Status, r.Raw, err)
		}
		e.svc.Unban(context.Background(), "test", target)
		r, err := good.Send(body, auth)
		if err != nil || r.Status != 401 || !strings.Contains(r.Error, "already used") {
			t.Fatalf("replay: %d %s %v", r.Status, r.Raw, err)
		}
		if _, banned := e.svc.Status(target); banned {
			t.Fatal("the replayed call banned the key")
		}
	})
	// A read sent twice in one second is the same NIP-98 event (nostr-tools
	// adds no nonce); reads may come again, changes may not (above).
	t.Run("a read's header used twice", func(t *testing.T) {
		for _, body := range []string{`{"method":"listbannedpubkeys","params":[]}`, `{"method":"supportedmethods","params":[]}`} {
			auth, _ := good.Header([]byte(body))
			for i := range 2 {
				if r, err := good.Send([]byte(body), auth); err != nil || r.Status != 200 || r.Error != "" {
					t.Fatalf("%s, use %d: %d %s %v", body, i+1, r.Status, r.Raw, err)
				}
			}
		}
	})
	t.Run("the ws:// spelling of the relay URL", func(t *testing.T) {
		ws := good
		ws.Sign = func(ev *nostr.Event) string { ev.Tags[0][1] = wsURL(e.url) + "/"; return "" }
		if r, err := ws.Call("supportedmethods"); err != nil || r.Status != 200 {
			t.Fatalf("%d %s %v", r.Status, r.Raw, err)
		}
	})

	bad := []struct {
		name   string
		method string
		params []any
	}{
		{"unknown method", "deleteeverything", nil},
		{"not a pubkey", "banpubkey", []any{"npub1nope"}},
		{"a pubkey that is a number", "banpubkey", []any{42}},
		{"no pubkey", "allowpubkey", nil},
		{"not an event id", "banevent", []any{"abc"}},
		{"a kind as a string", "allowkind", []any{"1"}},
		{"a kind out of range", "disallowkind", []any{70000}},
		{"a fractional kind", "allowkind", []any{1.5}},
		{"not an address", "blockip", []any{"example.com"}},
		{"a name too long", "changerelayname", []any{strings.Repeat("n", 101)}},
		{"an icon that is not a URL", "changerelayicon", []any{"javascript:alert(1)"}},
		{"unbanning a key that is not banned", "unbanpubkey", []any{target}},
		{"unblocking an address that is not blocked", "unblockip", []any{"192.0.2.1"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			status := 400
			if strings.HasPrefix(tt.method, "un") {
				status = 404
			}
			e.refused(t, good, status, tt.method, tt.params...)
		})
	}
	t.Run("a body that is not a request", func(t *testing.T) {
		body := []byte(`["banpubkey"]`)
		auth, _ := good.Header(body)
		if r, err := good.Send(body, auth); err != nil || r.Status != 400 || r.Error == "" {
			t.Fatalf("%d %s %v", r.Status, r.Raw, err)
		}
	})
	t.Run("GET", func(t *testing.T) {
		req, _ := http.NewRequest("GET", e.url, nil)
		req.Header.Set("Content-Type", "application/nostr+json+rpc")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || json.NewDecoder(resp.Body).Decode(&body) != nil || body["error"] == nil {
			t.Fatalf("%d Allow %q %v", resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	})
}

// signed is a with its auth event changed by change before signing.
func signed(a relaytest.Admin, change func(*nostr.Event)) relaytest.Admin {
	a.Sign = func(ev *nostr.Event) string { change(ev); return "" }
	return a
}

func TestNIP86SupportedMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got := e.call(t, "supportedmethods")
	want := []any{"allowevent", "allowkind", "allowpubkey", "banevent", "banpubkey", "blockip",
		"changerelaydescription", "changerelayicon", "changerelayname", "disallowkind",
		"listallowedevents", "listallowedkinds", "listallowedpubkeys", "listbannedevents", "listbannedpubkeys",
		"listblockedips", "listdisallowedkinds", "listeventsneedingmoderation", "supportedmethods",
		"unallowevent", "unallowpubkey", "unbanevent", "unbanpubkey", "unblockip"}
	if !slices.Equal(got.([]any), want) {
		t.Fatalf("supportedmethods = %v\nwant %v", got, want)
	}
	for _, m := range want {
		if m == "supportedmethods" {
			continue
		}
		// Every listed method answers (here with its params missing).
		r, err := e.manager().Call(m.(string))
		if err != nil || (r.Status != 200 && r.Status != 400) || strings.Contains(r.Error, "unsupported") {
			t.Errorf("%s: %d %s %v", m, r.Status, r.Raw, err)
		}
	}
}

// banpubkey, unbanpubkey and the allow list, seen by publishers and readers.
func TestNIP86PubKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	ask, apk := newKey()
	bsk, bpk := newKey()
	note := sign(t, ask, 1, "before the ban")
	w.mustPublish(note)
	byA := object{"authors": []string{apk}}

	e.call(t, "banpubkey", apk, "spam")
	if ok, reason := w.publish(sign(t, ask, 1, "during")); ok || reason != "blocked: you are banned from this relay: spam" {
		t.Fatalf("a banned key published: %v %q", ok, reason)
	}
	if got := stored(w, byA); len(got) != 0 {
		t.Fatalf("a banned key's events were served: %v", got)
	}
	if n := w.count("c", byA); n != 0 {
		t.Fatalf("a banned key's events were counted: %d", n)
	}
	if j, _ := json.Marshal(e.call(t, "listbannedpubkeys")); string(j) != `[{"pubkey":"`+apk+`","reason":"spam"}]` {
		t.Fatalf("listbannedpubkeys = %s", j)
	}
	e.call(t, "unbanpubkey", apk)
	if got := stored(w, byA); !slices.Equal(got, []string{note.ID}) {
		t.Fatalf("after unbanpubkey: %v, want the note again", got)
	}
	w.mustPublish(sign(t, ask, 1, "after"))
	if got := e.call(t, "listbannedpubkeys"); len(got.([]any)) != 0 {
		t.Fatalf("listbannedpubkeys after unbanpubkey = %v", got)
	}

	// An allow list: only its keys publish; everyone still reads.
	e.call(t, "allowpubkey", apk, "member")
	w.mustPublish(sign(t, ask, 1, "a member"))
	if ok, reason := w.publish(sign(t, bsk, 1, "a stranger")); ok || !strings.HasPrefix(reason, "restricted: ") {
		t.Fatalf("a key off the allow list published: %v %q", ok, reason)
	}
	if j, _ := json.Marshal(e.call(t, "listallowedpubkeys")); string(j) != `[{"pubkey":"`+apk+`","reason":"member"}]` {
		t.Fatalf("listallowedpubkeys = %s", j)
	}
	// banpubkey takes a key off the allow list (NIP-86), allowpubkey lifts
	// a ban.
	e.call(t, "allowpubkey", bpk)
	e.call(t, "banpubkey", bpk, "")
	if got := e.call(t, "listallowedpubkeys"); len(got.([]any)) != 1 {
		t.Fatalf("after banpubkey the key is still allowed: %v", got)
	}
	if ok, reason := w.publish(sign(t, bsk, 1, "x")); ok || !strings.HasPrefix(reason, "blocked: ") {
		t.Fatalf("banned and off the list: %v %q", ok, reason)
	}
	e.call(t, "allowpubkey", bpk, "forgiven")
	w.mustPublish(sign(t, bsk, 1, "forgiven"))
	if got := e.call(t, "listbannedpubkeys"); len(got.([]any)) != 0 {
		t.Fatalf("allowpubkey did not lift the ban: %v", got)
	}
	e.call(t, "unallowpubkey", apk)
	e.call(t, "unallowpubkey", bpk)
	other, _ := newKey()
	w.mustPublish(sign(t, other, 1, "an empty allow list lets everyone in"))
	e.refused(t, e.manager(), 404, "unallowpubkey", apk)
}

// Reported events wait in listeventsneedingmoderation until a moderator
// bans or allows them; unbanevent and unallowevent undo that.
func TestNIP86EventModeration(t *testing.T) {
	t.Parallel()
	sk, pk := newKey()
	e, w, a, b := twoNotes(t, sk)
	reporter, _ := newKey()
	w.mustPublish(sign(t, reporter, 1984, "", nostr.Tag{"p", pk, "spam"}, nostr.Tag{"e", a.ID, "spam"}))
	if _, err := e.svc.SubmitReport(context.Background(), banlist.NewReport{ReportedPubKey: pk, Reason: "illegal", EventIDs: []string{a.ID, b.ID}}); err != nil {
		t.Fatal(err)
	}
	queue := func() map[string]string {
		out := map[string]string{}
		for _, x := range e.call(t, "listeventsneedingmoderation").([]any) {
			m := x.(map[string]any)
			out[m["id"].(string)] = m["reason"].(string)
		}
		return out
	}
	if q := queue(); len(q) != 2 || q[a.ID] != "illegal, spam (2 reports)" || q[b.ID] != "illegal" {
		t.Fatalf("listeventsneedingmoderation = %v", q)
	}
	e.call(t, "banevent", a.ID)
	e.call(t, "allowevent", b.ID, "fine")
	if q := queue(); len(q) != 0 {
		t.Fatalf("moderated events still in the queue: %v", q)
	}
	if got := stored(w, object{"authors": []string{pk}}); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("served %v, want only the allowed one", got)
	}
	if j, _ := json.Marshal(e.call(t, "listallowedevents")); string(j) != `[{"id":"`+b.ID+`","reason":"fine"}]` {
		t.Fatalf("listallowedevents = %s", j)
	}
	e.call(t, "unbanevent", a.ID)
	e.call(t, "unallowevent", b.ID)
	if got := stored(w, object{"authors": []string{pk}}); len(got) != 2 {
		t.Fatalf("after unbanevent: %v, want both", got)
	}
	if q := queue(); len(q) != 2 {
		t.Fatalf("after unbanevent and unallowevent the reports wait again: %v", q)
	}
	// banevent takes an event off the allow list.
	e.call(t, "allowevent", a.ID)
	e.call(t, "banevent", a.ID, "after all")
	if got := e.call(t, "listallowedevents"); len(got.([]any)) != 0 {
		t.Fatalf("a banned event is still allowed: %v", got)
	}
	e.refused(t, e.manager(), 404, "unallowevent", a.ID)
}

func TestNIP86Kinds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, _ := newKey()
	e.call(t, "disallowkind", 4)
	if ok, reason := w.publish(sign(t, sk, 4, "dm")); ok || reason != "blocked: events of kind 4 are not accepted by this relay" {
		t.Fatalf("a disallowed kind: %v %q", ok, reason)
	}
	w.mustPublish(sign(t, sk, 1, "other kinds still go"))
	e.call(t, "allowkind", 1)
	e.call(t, "allowkind", 7)
	w.mustPublish(sign(t, sk, 7, "+"))
	if ok, reason := w.publish(sign(t, sk, 30023, "article")); ok || !strings.HasPrefix(reason, "blocked: ") {
		t.Fatalf("with kinds allowed, another kind: %v %q", ok, reason)
	}
	if got := e.call(t, "listallowedkinds"); !slices.Equal(got.([]any), []any{1.0, 7.0}) {
		t.Fatalf("listallowedkinds = %v", got)
	}
	if got := e.call(t, "listdisallowedkinds"); !slices.Equal(got.([]any), []any{4.0}) {
		t.Fatalf("listdisallowedkinds = %v", got)
	}
	// allowkind moves a disallowed kind to the allowed list, and back.
	e.call(t, "allowkind", 4)
	w.mustPublish(sign(t, sk, 4, "dm"))
	e.call(t, "disallowkind", 1)
	e.call(t, "disallowkind", 7)
	e.call(t, "disallowkind", 4)
	if got := e.call(t, "listallowedkinds"); len(got.([]any)) != 0 {
		t.Fatalf("listallowedkinds = %v", got)
	}
	w.mustPublish(sign(t, sk, 30023, "with no kind allowed, every kind not disallowed goes"))
}

// blockip: connections from the address or network are refused, open ones
// dropped at once; other addresses are not touched.
func TestNIP86BlockIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withClientIP)
	blocked := dialWireWith(t, e.url, 0, from("198.51.100.7"))
	blocked.req("s", object{"kinds": []int{1}})
	idle := dialWireWith(t, e.url, 0, from("198.51.100.200"))
	fine := dialWireWith(t, e.url, 0, from("203.0.113.1"))
	waitClients(t, e.rl, 3)

	e.call(t, "blockip", "198.51.100.0/24", "scanner")
	for name, w := range map[string]*wire{"subscribed": blocked, "idle": idle} {
		_, err := w.read(5 * time.Second)
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.HasPrefix(ce.Text, "blocked: ") {
			t.Fatalf("the %s connection from a blocked network: %v, want a 1008 close", name, err)
		}
	}
	waitClients(t, e.rl, 1)
	sk, _ := newKey()
	fine.mustPublish(sign(t, sk, 1, "still here"))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.DefaultDialer.DialContext(ctx, wsURL(e.url), from("198.51.100.9"))
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a new connection from a blocked network: %v %v, want 403", err, resp)
	}
	var body map[string]string
	if json.NewDecoder(resp.Body).Decode(&body); body["error"] != "ip_blocked" || !strings.HasPrefix(body["message"], "blocked: ") {
		t.Fatalf("403 body %v", body)
	}
	if j, _ := json.Marshal(e.call(t, "listblockedips")); string(j) != `[{"ip":"198.51.100.0/24","reason":"scanner"}]` {
		t.Fatalf("listblockedips = %s", j)
	}
	e.call(t, "blockip", "2001:db8::1")
	if _, resp, err := websocket.DefaultDialer.DialContext(ctx, wsURL(e.url), from("2001:db8::1")); err == nil || resp.StatusCode != 403 {
		t.Fatalf("a blocked IPv6 address: %v", err)
	}
	e.call(t, "unblockip", "198.51.100.0/24")
	dialWireWith(t, e.url, 0, from("198.51.100.9")).mustPublish(sign(t, sk, 1, "unblocked"))

	// Wider than a /16 or a /32: only with the third parameter "confirm_wide".
	if r := e.refused(t, e.manager(), 400, "blockip", "198.0.0.0/8", "a slip"); !strings.HasPrefix(r.Error, "confirmation_required: ") {
		t.Fatalf("an unconfirmed wide block: %s", r.Raw)
	}
	if r := e.refused(t, e.manager(), 400, "blockip", "2001:db8::/31", "", "yes"); !strings.HasPrefix(r.Error, "invalid_params: ") {
		t.Fatalf("a third parameter other than confirm_wide: %s", r.Raw)
	}
	e.call(t, "blockip", "198.0.0.0/8", "confirmed", "confirm_wide")
	if _, resp, err := websocket.DefaultDialer.DialContext(ctx, wsURL(e.url), from("198.51.100.9")); err == nil || resp.StatusCode != 403 {
		t.Fatalf("an address of a confirmed wide block: %v", err)
	}
}

// changerelayname, changerelaydescription and changerelayicon show in
// NIP-11 at once and survive a restart; an empty value goes back to the
// configured one.
func TestNIP86RelayInfo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.call(t, "changerelayname", "Renamed")
	e.call(t, "changerelaydescription", "A relay for tests")
	e.call(t, "changerelayicon", "https://example.com/icon.png")
	doc := nip11(t, e.url)
	if doc["name"] != "Renamed" || doc["description"] != "A relay for tests" || doc["icon"] != "https://example.com/icon.png" {
		t.Fatalf("NIP-11 after the changes: %v", doc)
	}
	// Another relay on the same store (a restart) serves the changes.
	again := relay.New(relay.Config{Store: e.st, BanList: e.list, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PublicURL: e.url, ServicePub: e.service, Name: "test"})
	if err := again.EnableManagement(e.svc.Management(), nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(again)
	defer srv.Close()
	if doc := nip11(t, srv.URL); doc["name"] != "Renamed" || doc["icon"] != "https://example.com/icon.png" {
		t.Fatalf("NIP-11 after a restart: %v", doc)
	}
	e.call(t, "changerelayname", "")
	if doc := nip11(t, e.url); doc["name"] != "test" {
		t.Fatalf("an empty name: %v, want the configured one", doc["name"])
	}
}

// Every change made over NIP-86 is in the audit log: who (the admin's
// npub), what, before, after, when.
func TestNIP86Audit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, pk := newKey()
	id := strings.Repeat("ab", 32)
	calls := [][]any{
		{"banpubkey", pk, "spam"}, {"unbanpubkey", pk}, {"allowpubkey", pk}, {"unallowpubkey", pk},
		{"banevent", id}, {"unbanevent", id}, {"allowevent", id}, {"unallowevent", id},
		{"allowkind", 1}, {"disallowkind", 1}, {"blockip", "192.0.2.0/24"}, {"unblockip", "192.0.2.0/24"},
		{"changerelayname", "n"}, {"changerelaydescription", "d"}, {"changerelayicon", "https://example.com/i.png"},
	}
	for _, c := range calls {
		e.call(t, c[0].(string), c[1:]...)
	}
	entries, err := e.svc.Audit(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range entries {
		if a.Actor != "nip86:"+pubkey.NPub(e.adminPK()) || a.At == 0 {
			t.Fatalf("audit entry %+v", a)
		}
		actions = append(actions, a.Action)
	}
	slices.Reverse(actions)
	want := []string{"ban", "unban", "pubkey.allow", "pubkey.unallow", "event.ban", "event.unban", "event.allow",
		"event.unallow", "kind.allow", "kind.disallow", "ip.block", "ip.unblock", "relay.name", "relay.description", "relay.icon"}
	if !slices.Equal(actions, want) {
		t.Fatalf("audited %v\nwant %v", actions, want)
	}
	last := entries[0]
	if string(last.Before) != `""` || string(last.After) != `"https://example.com/i.png"` || last.Target != "relay" {
		t.Fatalf("relay.icon entry: %+v", last)
	}
}

// listbannedpubkeys streams a list of many pages as one JSON answer: every
// ban once, in order of key.
func TestNIP86ListManyBans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var reqs []banlist.BanRequest
	var want []string
	for i := range 2_345 {
		_, pk := newKey()
		reqs = append(reqs, banlist.BanRequest{PubKey: pk, Reason: fmt.Sprintf("wave %d", i)})
		want = append(want, pk)
	}
	if _, err := e.svc.BanMany(t.Context(), "test", reqs); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	var got []string
	for _, v := range e.call(t, "listbannedpubkeys").([]any) {
		b := v.(map[string]any)
		if !strings.HasPrefix(b["reason"].(string), "wave ") {
			t.Fatalf("listed %v", b)
		}
		got = append(got, b["pubkey"].(string))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listbannedpubkeys gave %d keys, want the %d banned, in order of key", len(got), len(want))
	}
}
