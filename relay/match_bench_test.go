package relay

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func randomHex() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// hostileFilters are issue 25's subscription: 20 filters of 190 "#e" or
// "#p" values each.
func hostileFilters() nostr.Filters {
	fs := make(nostr.Filters, 20)
	for i := range fs {
		vs := make([]string, 190)
		for j := range vs {
			vs[j] = randomHex()
		}
		fs[i] = nostr.Filter{Tags: nostr.TagMap{[]string{"e", "p"}[i%2]: vs}}
	}
	return fs
}

// BenchmarkBroadcastMatching matches a reply (an "e" and a "p" tag, kind 1)
// that no subscription wants against subs hostile subscriptions: through
// the index, and by scanning every subscription's filters as broadcast did
// before it. B/value is the heap the indexed subscriptions hold per value.
func BenchmarkBroadcastMatching(b *testing.B) {
	sizes := []int{10, 100, 1000}
	if testing.Short() {
		sizes = []int{10}
	}
	ev := &nostr.Event{ID: randomHex(), PubKey: randomHex(), Kind: 1, CreatedAt: nostr.Now(),
		Tags: nostr.Tags{{"e", randomHex(), "", "root"}, {"p", randomHex()}}, Content: "a reply"}
	m := metaOf(ev)
	for _, n := range sizes {
		all := make([]nostr.Filters, n)
		for i := range all {
			all[i] = hostileFilters()
		}
		b.Run(fmt.Sprintf("index/subs=%d", n), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			reg := newRegistry()
			for _, fs := range all {
				s := &sub{}
				s.compile(fs)
				reg.add(s)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			reached := 0
			b.ResetTimer()
			for b.Loop() {
				reg.match(ev, m, func(*sub) { reached++ })
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n*20*190), "B/value")
			if reached > 0 {
				b.Fatal("a hostile subscription matched")
			}
			runtime.KeepAlive(reg)
		})
		if n > 100 {
			continue // the scan takes too long to measure
		}
		b.Run(fmt.Sprintf("scan/subs=%d", n), func(b *testing.B) {
			for b.Loop() {
				for _, fs := range all {
					if fs.Match(ev) {
						b.Fatal("a hostile subscription matched")
					}
				}
			}
		})
	}
}
