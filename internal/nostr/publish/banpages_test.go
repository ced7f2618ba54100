package publish

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/policies"
)

// TestBanPagesFitRelays: however the keys fall (here 30,000 random ones,
// and 5,000 sharing their first byte, some with the longest reasons),
// every page stays under 1,000 tags and 60 KB signed, the pages' prefixes
// are never one another's, and their union is the list. (Before, a page
// held every key of one first byte: 4,123 tags and 363 KB at a million
// bans, which strfry refuses.)
func TestBanPagesFitRelays(t *testing.T) {
	var bans []policies.Ban
	for i := range 30_000 {
		bans = append(bans, policies.Ban{PubKey: randomKey(""), Reason: "spam"})
		if i < 5000 {
			b := policies.Ban{PubKey: randomKey("00"), Reason: "flood", ExpiresAt: 1_900_000_000}
			if i%10 == 0 {
				b.Reason = strings.Repeat("é\"<", 66) // 200 characters, escaped at length
			}
			bans = append(bans, b)
		}
	}
	slices.SortFunc(bans, func(a, b policies.Ban) int { return strings.Compare(a.PubKey, b.PubKey) })
	pages := BanPages(bans)
	sk := nostr.GeneratePrivateKey()
	var union []string
	var prefixes []string
	for d, tags := range pages {
		ev := nostr.Event{Kind: KindBanPage, Tags: tags, CreatedAt: nostr.Now()}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(ev)
		if len(tags) > 1000 || len(raw) > 60_000 {
			t.Errorf("page %s: %d tags, %d bytes", d, len(tags), len(raw))
		}
		prefix := strings.TrimPrefix(d, banPagePrefix)
		prefixes = append(prefixes, prefix)
		for _, tag := range tags {
			if tag[0] == "p" {
				if !strings.HasPrefix(tag[1], prefix) {
					t.Fatalf("page %s holds %s", d, tag[1])
				}
				union = append(union, tag[1])
			}
		}
	}
	slices.Sort(prefixes)
	for i := 1; i < len(prefixes); i++ {
		if strings.HasPrefix(prefixes[i], prefixes[i-1]) {
			t.Errorf("page %s lies inside page %s", prefixes[i], prefixes[i-1])
		}
	}
	slices.Sort(union)
	want := make([]string, len(bans))
	for i, b := range bans {
		want[i] = b.PubKey
	}
	if !slices.Equal(union, want) {
		t.Errorf("the pages hold %d keys, the list %d", len(union), len(want))
	}
	t.Logf("%d bans in %d pages", len(bans), len(pages))
}

func randomKey(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])[len(prefix):]
}
