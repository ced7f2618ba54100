package banlistapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
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

// BenchmarkBulkBans: POST /admin/bans of a batch of banlist.MaxBatch new
// bans (NDJSON, hex keys), through the whole root handler into badger;
// reports bans/s.
func BenchmarkBulkBans(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(b, storetest.Options{Log: log})
	const admin = "bench-admin-key-0123456789"
	svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: policies.NewBanList(), SecretKey: nostr.GeneratePrivateKey(), Log: log, Settings: banlist.Settings{AdminKey: admin}})
	if err != nil {
		b.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{Relay: http.NotFoundHandler(), Log: log,
		Services: []httpapi.Service{{Name: "banlist", Mount: "/banlist", Routes: banlistapi.Routes(banlistapi.Config{Service: svc, Log: log, Now: time.Now})}}})
	// New keys every batch (a spam wave): -benchtime up to 20x.
	keys := benchKeys(20 * banlist.MaxBatch)
	bodies := [][]byte{}
	for lo := 0; lo+banlist.MaxBatch <= len(keys); lo += banlist.MaxBatch {
		var body bytes.Buffer
		for _, k := range keys[lo : lo+banlist.MaxBatch] {
			fmt.Fprintf(&body, `{"pubkey":%q,"reason":"spam wave"}`+"\n", k)
		}
		bodies = append(bodies, body.Bytes())
	}
	i := 0
	start, cpu0 := time.Now(), cpuTime()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/banlist/admin/bans", bytes.NewReader(bodies[i%len(bodies)]))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/x-ndjson")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		i++
	}
	b.ReportMetric(float64(i*banlist.MaxBatch)/time.Since(start).Seconds(), "bans/s")
	// CPU time a ban, of the whole process (badger's compactions too): on
	// a machine others share, wall time says more of them than of this.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(i*banlist.MaxBatch), "cpu-µs/ban")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchKeys is n distinct valid keys.
func benchKeys(n int) []string {
	var keys []string
	for i := 1; len(keys) < n; i++ {
		if k, err := pubkey.Parse(fmt.Sprintf("%064x", uint64(i)*0x9e3779b97f4a7c15)); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// BenchmarkBlockedPages: the whole list of 100,000 bans, loaded through
// BanMany, read in pages of 10,000 as a follower does; reports keys/s and
// CPU µs a key.
func BenchmarkBlockedPages(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(b, storetest.Options{Log: log})
	svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: policies.NewBanList(), SecretKey: nostr.GeneratePrivateKey(), Log: log})
	if err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	keys := benchKeys(n)
	for lo := 0; lo < n; lo += banlist.MaxBatch {
		reqs := make([]banlist.BanRequest, banlist.MaxBatch)
		for i := range reqs {
			reqs[i] = banlist.BanRequest{PubKey: keys[lo+i], Reason: "spam wave"}
		}
		if _, err := svc.BanMany(b.Context(), "key:bench", reqs); err != nil {
			b.Fatal(err)
		}
	}
	h := httpapi.New(httpapi.Config{Relay: http.NotFoundHandler(), Log: log,
		Services: []httpapi.Service{{Name: "banlist", Mount: "/banlist", Routes: banlistapi.Routes(banlistapi.Config{Service: svc, Log: log, Now: time.Now})}}})
	read := 0
	start, cpu0 := time.Now(), cpuTime()
	for b.Loop() {
		after := ""
		for {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/banlist/blocked/pubkeys?limit=10000&after="+after, nil))
			var page struct {
				PubKeys []json.RawMessage `json:"pubkeys"`
				Next    *string           `json:"next"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &page); w.Code != 200 || err != nil {
				b.Fatalf("%d %v", w.Code, err)
			}
			read += len(page.PubKeys)
			if page.Next == nil {
				break
			}
			after = *page.Next
		}
	}
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "keys/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(read), "cpu-µs/key")
}
