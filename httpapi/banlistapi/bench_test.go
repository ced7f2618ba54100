package banlistapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
)

// benchHandler is the whole root handler with n bans in the snapshot.
func benchHandler(b *testing.B, n int) (http.Handler, string) {
	b.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(b, storetest.Options{Log: log})
	list := policies.NewBanList()
	svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: list, SecretKey: nostr.GeneratePrivateKey(), Log: log})
	if err != nil {
		b.Fatal(err)
	}
	// The snapshot is what the read endpoints serve from; filling it
	// directly keeps setup fast.
	bans := make([]policies.Ban, n)
	for i := range bans {
		pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
		bans[i] = policies.Ban{PubKey: pk, Reason: "spam"}
	}
	list.SetBans(bans)
	h := httpapi.New(httpapi.Config{Relay: http.NotFoundHandler(), Log: log,
		Services: []httpapi.Service{{Name: "banlist", Mount: "/banlist", Routes: banlistapi.Routes(banlistapi.Config{Service: svc, Log: log, Now: time.Now})}}})
	return h, bans[n/2].PubKey
}

func serve(b *testing.B, h http.Handler, path string, header ...string) {
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 400 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

func BenchmarkBlockedStatus(b *testing.B) {
	h, banned := benchHandler(b, 100_000)
	b.Run("banned", func(b *testing.B) { serve(b, h, "/banlist/blocked/pubkeys/"+banned) })
	other, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	b.Run("not-banned", func(b *testing.B) { serve(b, h, "/banlist/blocked/pubkeys/"+other) })
}

func BenchmarkBlockedList(b *testing.B) {
	h, _ := benchHandler(b, 100_000)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/banlist/blocked/pubkeys", nil))
	etag := w.Header().Get("ETag")
	b.Run("full", func(b *testing.B) { serve(b, h, "/banlist/blocked/pubkeys") })
	b.Run("if-none-match", func(b *testing.B) { serve(b, h, "/banlist/blocked/pubkeys", "If-None-Match", etag) })
}
