package wotapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/internal/wot"
)

// newAPI serves the web of trust of seed at /wot, as outpost mounts it.
func newAPI(t *testing.T, seed string) (*wot.WoT, *apitest.Client) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := wot.DefaultSettings()
	cfg.Seeds = []string{seed}
	w, err := wot.New(wot.Config{Settings: cfg, DB: storetest.Open(t, storetest.Options{}).DB, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{Relay: http.NotFoundHandler(), Log: log, Services: []httpapi.Service{{
		Name: "wot", Mount: "/wot", Routes: Routes(Config{WoT: w, Log: log}), Health: httpapi.ReportHealth(Health(w))}}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return w, apitest.New(t, srv.URL+"/wot", OpenAPI())
}

// GET /wot/{npub}: the standing of a seed's follow, of a stranger, by npub
// or hex; a key that is not one is 400; every answer as documented.
func TestStanding(t *testing.T) {
	seedSK := nostr.GeneratePrivateKey()
	seedPK, _ := nostr.GetPublicKey(seedSK)
	alice, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	w, api := newAPI(t, seedPK)
	ev := nostr.Event{Kind: nostr.KindFollowList, CreatedAt: nostr.Timestamp(time.Now().Unix()), Tags: nostr.Tags{{"p", alice}}}
	ev.Sign(seedSK)
	if err := w.Apply(&ev); err != nil {
		t.Fatal(err)
	}
	w.Rerank()

	st := api.Do("GET", "/"+pubkey.NPub(alice), nil).Map(t)
	if st["hops"] != 1.0 || st["followers"] != 1.0 || st["member"] != true || st["enabled"] != true || st["pubkey"] != alice ||
		st["rank"].(float64) <= 0 || st["first_seen_at"] == nil {
		t.Fatalf("alice: %v", st)
	}
	stranger, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	st = api.Do("GET", "/"+stranger, nil).Map(t)
	if st["hops"] != -1.0 || st["member"] != false || st["weight"] != 0.0 || st["first_seen_at"] != nil {
		t.Fatalf("stranger: %v", st)
	}
	if r := api.Do("GET", "/npub1nothing", nil); r.Status != 400 || r.ErrorCode() != "invalid_pubkey" {
		t.Fatalf("a bad key: %d %s", r.Status, r.Body)
	}
	if h := api.Do("GET", "/health", nil).Map(t); h["status"] != "ok" || h["checks"].(map[string]any)["members"] != 2.0 ||
		h["checks"].(map[string]any)["keys"] != 2.0 || h["checks"].(map[string]any)["follows"] != 1.0 || h["checks"].(map[string]any)["full"] != false {
		t.Fatalf("health %v", h)
	}
	api.AssertCommonStatuses()
	api.CheckEdges(map[string]string{"npub": pubkey.NPub(alice)})
	api.AssertAllReached()
}

// TestTypesMatchTheDocument: every answer of the document is a Go type the
// handlers return.
func TestTypesMatchTheDocument(t *testing.T) {
	apitest.MatchTypes(t, openAPI, map[string]any{
		"ApiError": httpapi.ErrorBody{},
		"Standing": standing{},
		"Health":   outpost.Health[HealthChecks]{},
	})
}
