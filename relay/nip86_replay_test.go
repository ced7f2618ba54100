package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

// A banpubkey token used once is refused as a replay after a restart on the
// same data dir too, within its 60 s window.
func TestNIP86ReplayAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const public = "http://outpost.test" // the u tag: the same for both runs
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	admin := nostr.GeneratePrivateKey()
	adminPK, _ := nostr.GetPublicKey(admin)
	serve := func() (url string, stop func()) {
		st, err := store.Open(dir, log)
		if err != nil {
			t.Fatal(err)
		}
		list := policies.NewBanList()
		rl := relay.New(relay.Config{Store: st, BanList: list, Log: log, PublicURL: public, Name: "test"})
		svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: list, Publish: rl.Publish, SecretKey: nostr.GeneratePrivateKey(), Log: log})
		if err != nil {
			t.Fatal(err)
		}
		if err := rl.EnableManagement(svc.Management(), []string{adminPK}); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(rl)
		return srv.URL, func() { srv.Close(); st.Close() }
	}
	target, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	body, _ := json.Marshal(map[string]any{"method": "banpubkey", "params": []string{target, "spam"}})
	auth, err := nip98.Sign(admin, http.MethodPost, public, body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	call := func(url string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/nostr+json+rpc")
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	url, stop := serve()
	if code, b := call(url); code != 200 {
		t.Fatalf("first use: %d %s", code, b)
	}
	if code, b := call(url); code != 401 || !strings.Contains(b, `"replay"`) {
		t.Fatalf("second use: %d %s, want 401 replay", code, b)
	}
	stop()
	url, stop = serve()
	defer stop()
	if code, b := call(url); code != 401 || !strings.Contains(b, `"replay"`) {
		t.Fatalf("after a restart: %d %s, want 401 replay", code, b)
	}
}
