package relay_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

type env struct {
	srv     *httptest.Server
	url     string // http://127.0.0.1:port
	rl      *relay.Relay
	svc     *banlist.Service
	list    *policies.BanList
	admin   string          // secret key of the NIP-86 admin
	service string          // the service's public key
	calls   map[string]bool // the ids of the NIP-86 calls' auth events
	st      *store.Store
}

func (e *env) adminPK() string {
	pk, _ := nostr.GetPublicKey(e.admin)
	return pk
}

// newEnv serves a relay on a fresh store; opts adjust its configuration.
func newEnv(t *testing.T, opts ...func(*relay.Config)) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	list := policies.NewBanList()
	cfg := relay.Config{Store: st, BanList: list, Log: log, PublicURL: url, ServicePub: pk, Name: "test"}
	for _, o := range opts {
		o(&cfg)
	}
	rl := relay.New(cfg)
	svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: list, Publish: rl.Publish, SecretKey: sk, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	admin := nostr.GeneratePrivateKey()
	adminPK, _ := nostr.GetPublicKey(admin)
	if err := rl.EnableManagement(svc.Management(), []string{adminPK}); err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = rl
	relaytest.Serve(t, srv, rl, st)
	return &env{srv: srv, url: srv.URL, rl: rl, svc: svc, list: list, admin: admin, service: pk, st: st}
}

// withLimits changes the default limits.
func withLimits(change func(*relay.Limits)) func(*relay.Config) {
	return func(c *relay.Config) {
		l := relay.DefaultLimits()
		change(&l)
		c.Limits = &l
	}
}

func TestNIP40(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, _ := relaytest.Dial(t, e.srv.URL)
	sk := nostr.GeneratePrivateKey()
	past := strconv.FormatInt(time.Now().Unix()-1, 10)
	err := relaytest.Publish(t, c, relaytest.Sign(t, sk, 1, "old news", nostr.Tag{"expiration", past}))
	if err == nil || !strings.Contains(err.Error(), "invalid: this event has expired") {
		t.Fatalf("an expired event: %v", err)
	}
	for _, bad := range []nostr.Tag{{"expiration", "tomorrow"}, {"expiration", ""}, {"expiration", "1.7e9"}, {"expiration"}} {
		err := relaytest.Publish(t, c, relaytest.Sign(t, sk, 1, "when?", bad))
		if err == nil || !strings.Contains(err.Error(), "invalid: the expiration tag must be a unix timestamp") {
			t.Fatalf("expiration %q: %v, want invalid:", bad[1:], err)
		}
	}
	soon := time.Now().Unix() + 2
	ev := relaytest.Sign(t, sk, 1, "short-lived", nostr.Tag{"expiration", strconv.FormatInt(soon, 10)})
	if err := relaytest.Publish(t, c, ev); err != nil {
		t.Fatal(err)
	}
	if got := relaytest.Query(t, c, nostr.Filter{IDs: []string{ev.ID}}); len(got) != 1 {
		t.Fatalf("before expiry: %d events", len(got))
	}
	testkit.Past(time.Unix(soon, 0).Add(50 * time.Millisecond))
	if got := relaytest.Query(t, c, nostr.Filter{IDs: []string{ev.ID}}); len(got) != 0 {
		t.Fatalf("an expired event was served: %v", got)
	}
}

// An event's expiry is the store's sweep (events.SweepExpired runs
// DeleteExpired) and nothing else.
func TestExpiryIsTheStoresSweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	expires := nostr.Now() + 3600
	ev := relaytest.Sign(t, nostr.GeneratePrivateKey(), 1, "for an hour", nostr.Tag{"expiration", strconv.FormatInt(int64(expires), 10)})
	if ok, reason := e.rl.Ingest(context.Background(), &ev); !ok || reason != "" {
		t.Fatalf("Ingest: %v %q", ok, reason)
	}
	for _, step := range []struct {
		now     nostr.Timestamp
		deleted int
	}{{expires - 1, 0}, {expires, 1}} {
		n, err := e.st.Events.DeleteExpired(context.Background(), step.now)
		if err != nil || n != step.deleted {
			t.Fatalf("DeleteExpired at %d: %d, %v; want %d deleted", step.now, n, err, step.deleted)
		}
	}
}

// rpc sends a NIP-86 request whose auth header mod may spoil.
func (e *env) rpc(t *testing.T, method string, mod func(h *http.Header, body []byte) []byte, params ...any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"method": method, "params": params})
	req, _ := http.NewRequest("POST", e.srv.URL+"/", nil)
	req.Header.Set("Content-Type", "application/nostr+json+rpc")
	auth, _ := nip98.Sign(e.admin, "POST", e.srv.URL, body, time.Now())
	req.Header.Set("Authorization", auth)
	if mod != nil {
		body = mod(&req.Header, body)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestNIP86Auth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	target := nostr.GeneratePrivateKey()
	targetPK, _ := nostr.GetPublicKey(target)
	signAs := func(sk string, mod func(*nostr.Event)) func(*http.Header, []byte) []byte {
		return func(h *http.Header, body []byte) []byte {
			raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(h.Get("Authorization"), "Nostr "))
			var ev nostr.Event
			json.Unmarshal(raw, &ev)
			mod(&ev)
			ev.Sign(sk)
			b, _ := json.Marshal(ev)
			h.Set("Authorization", "Nostr "+base64.StdEncoding.EncodeToString(b))
			return body
		}
	}
	tests := []struct {
		name   string
		mod    func(*http.Header, []byte) []byte
		status int
	}{
		{"no auth", func(h *http.Header, b []byte) []byte { h.Del("Authorization"); return b }, 401},
		{"wrong kind", signAs(e.admin, func(ev *nostr.Event) { ev.Kind = 1 }), 401},
		{"wrong method", signAs(e.admin, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"u", e.srv.URL}, {"method", "GET"}, ev.Tags[2]} }), 401},
		{"wrong u", signAs(e.admin, func(ev *nostr.Event) { ev.Tags[0][1] = "http://elsewhere.example" }), 401},
		{"method in lower case", signAs(e.admin, func(ev *nostr.Event) { ev.Tags[1][1] = "post" }), 401},
		{"a second u", signAs(e.admin, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"u", "http://elsewhere.example"}) }), 401},
		{"stale", signAs(e.admin, func(ev *nostr.Event) { ev.CreatedAt -= 120 }), 401},
		{"from the future", signAs(e.admin, func(ev *nostr.Event) { ev.CreatedAt += 120 }), 401},
		{"tampered body", func(h *http.Header, b []byte) []byte {
			return bytes.Replace(b, []byte("banpubkey"), []byte("banevent"), 1)
		}, 401},
		{"not an admin", signAs(nostr.GeneratePrivateKey(), func(*nostr.Event) {}), 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m := e.rpc(t, "banpubkey", tt.mod, targetPK, "x")
			if status != tt.status || m["error"] == nil || m["error"] == "" {
				t.Fatalf("got %d %v, want %d with an error", status, m, tt.status)
			}
			if _, banned := e.svc.Status(targetPK); banned {
				t.Fatal("a refused request banned the key")
			}
		})
	}
	// The ws:// form of the relay URL is accepted too, and a header works once.
	var header string
	status, m := e.rpc(t, "banpubkey", func(h *http.Header, body []byte) []byte {
		auth, _ := nip98.Sign(e.admin, "POST", "ws"+strings.TrimPrefix(e.srv.URL, "http"), body, time.Now())
		h.Set("Authorization", auth)
		header = auth
		return body
	}, targetPK, "spam")
	if status != 200 || m["error"] != nil && m["error"] != "" {
		t.Fatalf("admin with the ws URL: %d %v", status, m)
	}
	if _, banned := e.svc.Status(targetPK); !banned {
		t.Fatal("the admin's banpubkey did not ban")
	}
	if status, _ := e.rpc(t, "banpubkey", func(h *http.Header, b []byte) []byte { h.Set("Authorization", header); return b }, targetPK, "spam"); status != 401 {
		t.Fatalf("a replayed header: %d, want 401", status)
	}
	resp, err := http.Get(e.srv.URL + "/")
	if err == nil {
		resp.Body.Close()
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/", nil)
	req.Header.Set("Content-Type", "application/nostr+json+rpc")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 405 {
		t.Fatalf("GET with the NIP-86 content type: %v %v", resp, err)
	}
}

func TestServiceEventsSkipPolicyAndShutdownRefusesWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.svc.AddWord(context.Background(), "test", "scam")
	r, err := e.svc.SubmitReport(context.Background(), banlist.NewReport{ReportedPubKey: mustPK(t), Reason: "spam", Comment: "posts scam links"})
	if err != nil {
		t.Fatalf("a report quoting a blocked word was refused: %v", err)
	}
	if r.ID == "" {
		t.Fatal("no report id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e.rl.CloseClients(ctx)
	ev := relaytest.Sign(t, nostr.GeneratePrivateKey(), 1, "late")
	if err := e.rl.Publish(context.Background(), &ev); err == nil {
		t.Fatal("a write after shutdown began was accepted")
	}
}

func mustPK(t *testing.T) string {
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	return pk
}

// NIP-09: once its author deleted an event, the relay refuses it again.
func TestDeletedEventsStayDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, _ := relaytest.Dial(t, e.srv.URL)
	sk := nostr.GeneratePrivateKey()
	ev := relaytest.Sign(t, sk, 1, "regret")
	if err := relaytest.Publish(t, c, ev); err != nil {
		t.Fatal(err)
	}
	del := relaytest.Sign(t, sk, 5, "", nostr.Tag{"e", ev.ID})
	if err := relaytest.Publish(t, c, del); err != nil {
		t.Fatal(err)
	}
	err := relaytest.Publish(t, c, ev)
	if err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("republishing a deleted event: %v", err)
	}
	// Someone else's deletion request does not count.
	other := relaytest.Sign(t, sk, 1, "keep me")
	relaytest.Publish(t, c, other)
	relaytest.Publish(t, c, relaytest.Sign(t, nostr.GeneratePrivateKey(), 5, "", nostr.Tag{"e", other.ID}))
	if got := relaytest.Query(t, c, nostr.Filter{IDs: []string{other.ID}}); len(got) != 1 {
		t.Fatalf("a stranger deleted an event: %v", got)
	}
	// Addressable events deleted by address stay deleted up to the deletion's time.
	d := relaytest.Sign(t, sk, 30023, "article", nostr.Tag{"d", "post"})
	relaytest.Publish(t, c, d)
	addr := fmt.Sprintf("30023:%s:post", d.PubKey)
	relaytest.Publish(t, c, relaytest.Sign(t, sk, 5, "", nostr.Tag{"a", addr}))
	if err := relaytest.Publish(t, c, d); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("republishing a deleted addressable event: %v", err)
	}
}
