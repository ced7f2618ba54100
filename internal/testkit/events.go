package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/nbd-wtf/go-nostr"
)

// MixedEvents are n signed events of a relay's usual mix, by 50 authors,
// created before now, the same for the same n and now: mostly notes
// (kind 1) and reactions (7), with replaceable events (profiles, kind 0;
// contact lists, 3) and addressable ones (articles, 30023, over 20 d
// values) in several versions each, so that only the newest of an address
// is kept, and about one in a hundred a deletion request (kind 5) by id of
// an earlier note by its author, or by address of an article. Each is
// passed to yield in the order created; yield returns false to stop.
func MixedEvents(n int, now nostr.Timestamp, yield func(nostr.Event) bool) {
	const authors = 50
	keys, pubs := make([]string, authors), make([]string, authors)
	for a := range keys {
		h := sha256.Sum256([]byte("outpost testkit author " + strconv.Itoa(a)))
		keys[a] = hex.EncodeToString(h[:])
		pubs[a], _ = nostr.GetPublicKey(keys[a])
	}
	notes := make([][]string, authors) // each author's notes so far, to delete
	for i := range n {
		a := i % authors
		ev := mixedEvent(i, now-nostr.Timestamp(n-i), pubs[a], notes[a])
		if err := ev.Sign(keys[a]); err != nil {
			panic(err)
		}
		if ev.Kind == 1 {
			notes[a] = append(notes[a], ev.ID)
		}
		if !yield(ev) {
			return
		}
	}
}

// mixedEvent is the i-th event of MixedEvents, unsigned, by pub; notes are
// its author's notes so far.
func mixedEvent(i int, at nostr.Timestamp, pub string, notes []string) nostr.Event {
	ev := nostr.Event{CreatedAt: at, Kind: 1, Tags: nostr.Tags{}, Content: fmt.Sprintf("note %d", i)}
	switch r := i % 100; {
	case r == 7 && len(notes) > 0:
		ev.Kind, ev.Content = 5, "deleted"
		ev.Tags = nostr.Tags{{"e", notes[len(notes)/2]}}
	case r == 72: // by the author of the article at r == 22
		ev.Kind, ev.Content = 5, "article withdrawn"
		ev.Tags = nostr.Tags{{"a", "30023:" + pub + ":article-2"}}
	case r < 10:
		ev.Kind, ev.Content = 0, fmt.Sprintf(`{"name":"author %d","about":"version %d"}`, i%50, i)
	case r < 15:
		ev.Kind, ev.Content = 3, ""
		ev.Tags = nostr.Tags{{"p", fmt.Sprintf("%064x", i%50)}}
	case r < 25:
		ev.Kind, ev.Content = 30023, fmt.Sprintf("article version %d", i)
		ev.Tags = nostr.Tags{{"d", "article-" + strconv.Itoa(i%20)}, {"t", "test"}}
	case r < 45:
		ev.Kind, ev.Content = 7, "+"
		ev.Tags = nostr.Tags{{"e", fmt.Sprintf("%064x", i-1)}, {"p", fmt.Sprintf("%064x", i%50)}}
	}
	return ev
}
