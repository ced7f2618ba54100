package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// watch subscribes to f and collects what arrives, stored and live.
type watch struct {
	mu  sync.Mutex
	evs []*nostr.Event
}

func watchRelay(t *testing.T, inst *instance, f nostr.Filter) *watch {
	t.Helper()
	r := connect(t, inst)
	sub, err := r.Subscribe(context.Background(), nostr.Filters{f})
	if err != nil {
		t.Fatal(err)
	}
	w := &watch{}
	go func() {
		for ev := range sub.Events {
			w.mu.Lock()
			w.evs = append(w.evs, ev)
			w.mu.Unlock()
		}
	}()
	return w
}

// latest is the newest event seen whose d tag is d.
func (w *watch) latest(d string) *nostr.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out *nostr.Event
	for _, ev := range w.evs {
		if ev.Tags.GetD() == d && (out == nil || ev.CreatedAt >= out.CreatedAt) {
			out = ev
		}
	}
	return out
}

func tagValue(ev *nostr.Event, name string) string {
	if ev == nil {
		return ""
	}
	if t := ev.Tags.Find(name); t != nil {
		return t[1]
	}
	return ""
}

// TestPublishedEvents: a client subscribed to outpost's relay gets the
// mint status events pushed as a mint goes offline, and the ban list pages
// as keys are banned and temporary bans lapse; the publish relay gets the
// same events.
func TestPublishedEvents(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)

	mint := startTestMint(t, t.TempDir(), "", "Status Mint")
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_PUBLISH_RELAYS": "ws" + strings.TrimPrefix(srv.URL, "http"),
		"OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "500ms"})
	_, idx := call(t, "GET", inst.url+"/", nil)
	service, err := pubkey.Parse(idx["pubkey"].(string))
	if err != nil {
		t.Fatal(err)
	}
	statuses := watchRelay(t, inst, nostr.Filter{Kinds: []int{38166}, Authors: []string{service}})
	bans := watchRelay(t, inst, nostr.Filter{Kinds: []int{30000}, Authors: []string{service}})

	if code, body := call(t, "POST", inst.url+"/mintdir/mints/submit", map[string]any{"mint_url": mint.URL}); code != 202 {
		t.Fatalf("submit: %d %v", code, body)
	}
	testkit.WaitFor(t, 15*time.Second, "the mint's status event: online", func() bool {
		return tagValue(statuses.latest(mint.URL), "status") == "online"
	})
	ev := statuses.latest(mint.URL)
	if ok, _ := ev.CheckSignature(); !ok || tagValue(ev, "name") != "Status Mint" || tagValue(ev, "rtt") == "" || ev.Tags.Find("N") == nil {
		t.Fatalf("status event = %v", ev)
	}
	mint.Close()
	testkit.WaitFor(t, 20*time.Second, "the status event pushed: offline", func() bool {
		return tagValue(statuses.latest(mint.URL), "status") == "offline"
	})
	if tagValue(statuses.latest(mint.URL), "offline_since") == "" {
		t.Fatalf("offline without offline_since: %v", statuses.latest(mint.URL))
	}

	banned := nostr.GeneratePrivateKey()
	bannedPK, _ := nostr.GetPublicKey(banned)
	tempPK, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	if code, body := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": bannedPK, "reason": "spam bot"}, admin()...); code != 200 {
		t.Fatalf("ban: %d %v", code, body)
	}
	exp := time.Now().Unix() + 2
	if code, body := call(t, "POST", inst.url+"/banlist/admin/temp-ban", map[string]any{"pubkey": tempPK, "reason": "cool down", "expires_at": exp}, admin()...); code != 200 {
		t.Fatalf("temp-ban: %d %v", code, body)
	}
	if code, _ := call(t, "POST", inst.url+"/banlist/admin/words", map[string]any{"word": "Buy Now"}, admin()...); code != 201 && code != 200 {
		t.Fatalf("add word: %d", code)
	}
	listed := func(pk string) nostr.Tag {
		if ev := bans.latest("outpost-bans-" + pk[:2]); ev != nil {
			for tag := range ev.Tags.FindAll("p") {
				if tag[1] == pk {
					return tag
				}
			}
		}
		return nil
	}
	testkit.WaitFor(t, 3*time.Second, "both bans and the word published", func() bool {
		return listed(bannedPK) != nil && listed(tempPK) != nil && tagValue(bans.latest("outpost-words-"), "word") == "buy now"
	})
	if p := listed(bannedPK); len(p) != 4 || p[3] != "spam bot" {
		t.Fatalf("p tag of a ban: %v", p)
	}
	if p := listed(tempPK); len(p) != 5 || p[4] == "" {
		t.Fatalf("p tag of a temporary ban: %v", p)
	}
	testkit.WaitFor(t, 5*time.Second, "the lapsed ban's page republished without it", func() bool { return listed(tempPK) == nil })

	testkit.WaitFor(t, 10*time.Second, "the publish relay to get the latest status", func() bool {
		return rec.has(statuses.latest(mint.URL).ID)
	})
}

// recorder is a relay that takes every event and keeps its id.
type recorder struct {
	mu     sync.Mutex
	ids    map[string]bool
	refuse string // when set, every event is refused with this reason
}

// refusing makes rec refuse every event with reason ("": take them).
func (rec *recorder) refusing(reason string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.refuse = reason
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
		var msg []json.RawMessage
		var ev nostr.Event
		var label, sub string
		if json.Unmarshal(data, &msg) != nil || len(msg) < 2 || json.Unmarshal(msg[0], &label) != nil {
			continue
		}
		if label != "EVENT" { // it answers no REQ or COUNT
			json.Unmarshal(msg[1], &sub)
			closed, _ := json.Marshal([]any{"CLOSED", sub, "unsupported: only EVENT"})
			c.WriteMessage(websocket.TextMessage, closed)
			continue
		}
		if len(msg) != 2 || json.Unmarshal(msg[1], &ev) != nil {
			continue
		}
		rec.mu.Lock()
		if rec.ids == nil {
			rec.ids = map[string]bool{}
		}
		refuse := rec.refuse
		if refuse == "" {
			rec.ids[ev.ID] = true
		}
		rec.mu.Unlock()
		ok, _ := json.Marshal([]any{"OK", ev.ID, refuse == "", refuse})
		c.WriteMessage(websocket.TextMessage, ok)
	}
}

func (rec *recorder) has(id string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.ids[id]
}

// TestPublishRefusalsReported: a publish relay that refuses the list's
// pages (as strfry refuses an event over its limits) degrades the ban
// list's health, naming the relay, the page and the reason, and counts in
// /metrics; the page is tried again until the relay takes it.
func TestPublishRefusalsReported(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rec.refusing("invalid: too many tags")
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	relayURL := "ws" + strings.TrimPrefix(srv.URL, "http")
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_PUBLISH_RELAYS": relayURL})
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	if code, body := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": pk, "reason": "spam"}, admin()...); code != 200 {
		t.Fatalf("ban: %d %v", code, body)
	}
	page := "outpost-bans-" + pk[:2]
	var health map[string]any
	testkit.WaitFor(t, 20*time.Second, "the refusal in /banlist/health", func() bool {
		_, health = call(t, "GET", inst.url+"/banlist/health", nil)
		return health["status"] == "degraded" && strings.Contains(fmt.Sprint(health["reason"]), page)
	})
	if reason := fmt.Sprint(health["reason"]); !strings.Contains(reason, relayURL) || !strings.Contains(reason, "too many tags") {
		t.Fatalf("health reason %q names neither the relay nor why", reason)
	}
	m, _ := scrape(t, inst.url+"/metrics")
	if got := value(m, "outpost_publish_events_total", "relay", relayURL, "outcome", "refused"); got < 1 {
		t.Fatalf("refused publications in /metrics: %v", got)
	}
	if _, root := call(t, "GET", inst.url+"/health", nil); root["status"] != "degraded" {
		t.Fatalf("root health: %v", root)
	}

	rec.refusing("")
	testkit.WaitFor(t, 30*time.Second, "the page taken when tried again, and health ok", func() bool {
		_, health = call(t, "GET", inst.url+"/banlist/health", nil)
		return health["status"] == "ok"
	})
	m, _ = scrape(t, inst.url+"/metrics")
	if got := value(m, "outpost_publish_events_total", "relay", relayURL, "outcome", "published"); got < 1 {
		t.Fatalf("published in /metrics: %v", got)
	}
}

// TestRestartOffersThePages: pages signed while a publish relay was not
// configured (or was away, and the queue went with the process) reach it
// after a restart, though they are not signed again.
func TestRestartOffersThePages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := start(t, dir, nil)
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	if code, body := call(t, "POST", first.url+"/banlist/admin/ban", map[string]any{"pubkey": pk, "reason": "spam"}, admin()...); code != 200 {
		t.Fatalf("ban: %d %v", code, body)
	}
	service := servicePubKey(t, first)
	page := nostr.Filter{Kinds: []int{30000}, Authors: []string{service}, Tags: nostr.TagMap{"d": {"outpost-bans-" + pk[:2]}}}
	var id string
	conn := connect(t, first) // one connection: a new one each poll would pass the relay's per-IP limit (429)
	testkit.WaitFor(t, 10*time.Second, "the page on outpost's relay", func() bool {
		evs := query(t, conn, page)
		if len(evs) == 1 {
			id = evs[0].ID
		}
		return id != ""
	})
	first.shutdown(t)

	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	start(t, dir, map[string]string{"OUTPOST_PUBLISH_RELAYS": "ws" + strings.TrimPrefix(srv.URL, "http")})
	testkit.WaitFor(t, 20*time.Second, "the page signed before the restart on the publish relay", func() bool { return rec.has(id) })
}
