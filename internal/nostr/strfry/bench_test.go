package strfry_test

import (
	"fmt"
	"strings"
	"testing"

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
