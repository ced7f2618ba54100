package mintdirtest

import (
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// StatusEvent is another monitor's kind-38166 event for the mint at
// mintURL, signed by sk as outpost signs its own (publish.StatusTags): its
// own observation in status, with last_check at, an rtt when up and an
// offline_since a minute before when offline, and a consensus tag the
// directory must never read (it says all is well). extra tags go last.
func StatusEvent(sk, mintURL, status string, at time.Time, extra ...nostr.Tag) *nostr.Event {
	unix := func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	tags := nostr.Tags{{"d", mintURL}, {"u", mintURL}, {"status", status}, {"last_check", unix(at)}}
	if status == "offline" {
		tags = append(tags, nostr.Tag{"offline_since", unix(at.Add(-time.Minute))})
	} else {
		tags = append(tags, nostr.Tag{"rtt", "120"})
	}
	tags = append(append(tags, nostr.Tag{"consensus", "online", "3", "3"}), extra...)
	ev := &nostr.Event{Kind: 38166, CreatedAt: nostr.Timestamp(at.Unix()), Tags: tags}
	if err := ev.Sign(sk); err != nil {
		panic(err) // a key from nostr.GeneratePrivateKey always signs
	}
	return ev
}
