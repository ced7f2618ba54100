package relay_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// TestStoredBatchesStayIntact reads stored events of every size through
// many REQs at once, on several connections: the JSON of stored events is
// copied into pooled buffers that the writer gives back once a batch is
// encoded, so a buffer given back too early would show here as an event
// whose signature no longer verifies, or as a frame that is not JSON.
func TestStoredBatchesStayIntact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pub := dialWire(t, e.url, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var sk string
	want := map[string]bool{}
	for i := range 300 {
		if i%20 == 0 { // within the relay's rate limit per key
			sk = nostr.GeneratePrivateKey()
		}
		size := 50 + rng.IntN(3000)
		var tags nostr.Tags
		switch i % 50 {
		case 7: // more than a whole batch buffer
			size = 60 << 10
			for j := range 10 {
				tags = append(tags, nostr.Tag{"t", fmt.Sprintf("%d%s", j, strings.Repeat("y", 1000))})
			}
		case 8: // more than a batch, less than its buffer
			size = 40 << 10
		}
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1700000000 + i), Tags: tags, Content: fmt.Sprintf("%d %s", i, strings.Repeat("x", size))}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		if ok, reason := pub.publish(ev); !ok {
			t.Fatalf("event %d of %d bytes refused: %s", i, size, reason)
		}
		want[ev.ID] = true
	}

	var wg sync.WaitGroup
	for c := range 4 {
		w := dialWire(t, e.url, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			left := map[string]int{} // events each open subscription still owes
			for s := range 6 {
				id := fmt.Sprintf("c%d-s%d", c, s)
				left[id] = 100 + 40*s
				w.send("REQ", id, map[string]any{"kinds": []int{1}, "limit": left[id]})
			}
			for len(left) > 0 {
				m, err := w.read(10 * time.Second)
				if err != nil {
					t.Errorf("connection %d: %v", c, err)
					return
				}
				id := m.str(1)
				n, open := left[id]
				switch {
				case !open:
					t.Errorf("%s for a subscription not open: %.200s", m.label, m)
					return
				case m.label == "EOSE":
					if n != 0 {
						t.Errorf("%s: EOSE with %d events missing", id, n)
					}
					delete(left, id)
				case m.label == "EVENT":
					var ev nostr.Event
					if err := json.Unmarshal(m.parts[2], &ev); err != nil {
						t.Errorf("%s: an event that is not JSON: %v", id, err)
						return
					}
					if ok, err := ev.CheckSignature(); !ok || !want[ev.ID] {
						t.Errorf("%s: event %s altered on the way (signature %v, %v)", id, ev.ID, ok, err)
						return
					}
					left[id] = n - 1
				default:
					t.Errorf("unexpected %.200s", m)
					return
				}
			}
		}()
	}
	wg.Wait()
}
