package strfry_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/strfry"
	"github.com/outpost-relay/outpost/policies"
)

// BenchmarkDecide: the plugin's decision on one strfry input line, with
// 100,000 bans and 1,000 blocked words, for a note by a banned key and for
// a clean note of 280 characters (which goes through the word matcher).
func BenchmarkDecide(b *testing.B) {
	l := policies.NewBanList()
	bans := make([]policies.Ban, 100_000)
	for i := range bans {
		bans[i] = policies.Ban{PubKey: fmt.Sprintf("%064x", i*7919), Reason: "spam"}
	}
	l.SetBans(bans)
	words := make([]string, 1_000)
	for i := range words {
		words[i] = fmt.Sprintf("blockedword%d", i)
	}
	l.SetWords(words)
	text := strings.Repeat("gm nostr, zaps for everyone ", 10)
	for _, c := range []struct{ name, pubkey string }{
		{"banned", bans[500].PubKey}, {"clean", strings.Repeat("cd", 32)},
	} {
		line := []byte(input("new", id(1), c.pubkey, 1, text, "IP4", "203.0.113.7"))
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				strfry.Decide(l, line, 1_800_000_000)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// BenchmarkStartWithoutCache: the plugin started without a cache file
// against a primary of 100,000 bans (loaded through BanMany), timed to its
// first answer, which waits for the whole list; reports the CPU µs a ban
// of this process (the primary's share included).
func BenchmarkStartWithoutCache(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, _, h := newPrimary(b, log)
	const n = 100_000
	for lo := 0; lo < n; lo += banlist.MaxBatch {
		reqs := make([]banlist.BanRequest, banlist.MaxBatch)
		for i := range reqs {
			pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
			reqs[i] = banlist.BanRequest{PubKey: pk, Reason: "spam wave"}
		}
		if _, err := svc.BanMany(b.Context(), "key:bench", reqs); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	line := `{"type":"new","event":{"id":"` + strings.Repeat("1", 64) + `","pubkey":"` + strings.Repeat("2", 64) + `","kind":1,"content":"gm"}}` + "\n"
	var cpu time.Duration
	runs := 0
	for b.Loop() {
		runs++
		cache := filepath.Join(b.TempDir(), "cache")
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		cpu0 := processCPU()
		go func() {
			done <- strfry.Run(ctx, strfry.Options{From: srv.URL, Cache: cache, Interval: time.Hour, Log: log}, inR, outW)
		}()
		io.WriteString(inW, line)
		if _, err := bufio.NewReader(outR).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - cpu0
		inW.Close()
		<-done
		cancel()
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(runs*n), "cpu-µs/ban")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
