// Package profiles finds a Nostr user's profile (the newest valid kind-0
// event) and the earliest event of theirs we can see, in the relay's own
// store and on other relays. The faucet uses the profile's lud16 for npub
// logins and the earliest event as the account's age; Latest finds a
// user's newest event of a replaceable kind, such as the kind 10019 of a
// nutzap payout, also on the relays of the user's own kind 10002.
package profiles

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Store is where the relay keeps events (package events).
type Store interface {
	Find(ctx context.Context, filter nostr.Filter) iter.Seq2[*nostr.Event, error]
}

// Profile is what the faucet uses of a kind-0 event.
type Profile struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	Picture     string `json:"picture"`
	NIP05       string `json:"nip05"`
	LUD16       string `json:"lud16"`
	EventID     string `json:"event_id"`
	CreatedAt   int64  `json:"created_at"`
}

// Result is what one fetch found.
type Result struct {
	Profile     *Profile // newest valid kind-0; nil when none was found
	FirstSeenAt int64    // created_at of the earliest event seen; 0 when none
	Failed      []string // relays that could not be queried
}

// Fetcher looks profiles up locally and on Relays.
type Fetcher struct {
	Local   Store
	Relays  []string      // ws:// or wss:// URLs
	Timeout time.Duration // for the remote part; default 4s
	// NetDial dials relays a user named (in a kind-10002 event): a
	// netguard-guarded dialer, so no user sends us to a private address.
	// Nil: a plain dialer.
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)
	Log     *slog.Logger
	Now     func() time.Time
}

// maxFuture: events dated further ahead are ignored for age and profile,
// so a user cannot pin a profile by post-dating it, nor relays' clocks skew
// the result much.
const maxFuture = 15 * time.Minute

// Fetch collects pubkey's newest kind-0 and earliest event. ageCutoff, when
// not zero, adds a query for any event older than it, so an account old
// enough to be eligible is found even when it has many newer events.
// Failures of single relays are reported in Result.Failed, never fatal.
func (f *Fetcher) Fetch(ctx context.Context, pubkey string, ageCutoff time.Time) Result {
	filters := nostr.Filters{
		{Kinds: []int{0}, Authors: []string{pubkey}, Limit: 1},
		{Authors: []string{pubkey}, Limit: 100},
	}
	if !ageCutoff.IsZero() {
		until := nostr.Timestamp(ageCutoff.Unix())
		filters = append(filters, nostr.Filter{Authors: []string{pubkey}, Until: &until, Limit: 1})
	}
	var events []*nostr.Event
	if f.Local != nil {
		for _, flt := range filters {
			events = append(events, queryLocal(ctx, f.Local, flt)...)
		}
	}
	remote, failed := f.fetchRemote(ctx, f.Relays, nil, pubkey, filters)
	res := summarize(append(events, remote...), pubkey, nostr.Timestamp(f.now().Add(maxFuture).Unix()))
	res.Failed = failed
	return res
}

// fetchRemote asks every relay at once, within the timeout; what each
// relay sends is verified event by event, and kept even when it fails later.
func (f *Fetcher) fetchRemote(ctx context.Context, relays []string, dial func(context.Context, string, string) (net.Conn, error),
	pubkey string, filters nostr.Filters) (events []*nostr.Event, failed []string) {
	if len(relays) == 0 {
		return nil, nil
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 4 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, url := range relays {
		wg.Go(func() {
			evs, err := queryRelay(ctx, url, dial, filters)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, url)
				if f.Log != nil {
					f.Log.Debug("profile relay query failed", "relay", url, "pubkey", pubkey, "err", err)
				}
			}
			for _, ev := range evs {
				if ev.PubKey == pubkey && filters.Match(ev) && ev.CheckID() {
					if ok, _ := ev.CheckSignature(); ok {
						events = append(events, ev)
					}
				}
			}
		})
	}
	wg.Wait()
	return events, failed
}

// summarize finds pubkey's newest valid profile and earliest event among
// events, ignoring those dated after limit.
func summarize(events []*nostr.Event, pubkey string, limit nostr.Timestamp) Result {
	var res Result
	var newest *nostr.Event
	for _, ev := range events {
		if ev.PubKey != pubkey || ev.CreatedAt > limit || ev.CreatedAt <= 0 {
			continue
		}
		if res.FirstSeenAt == 0 || int64(ev.CreatedAt) < res.FirstSeenAt {
			res.FirstSeenAt = int64(ev.CreatedAt)
		}
		if ev.Kind == 0 && (newest == nil || ev.CreatedAt > newest.CreatedAt ||
			ev.CreatedAt == newest.CreatedAt && ev.ID < newest.ID) {
			if p, ok := Parse(ev); ok {
				newest, res.Profile = ev, p
			}
		}
	}
	return res
}

// queryLocal reads what the store holds of f; a failure leaves what was
// read (the relays asked besides may have the rest).
func queryLocal(ctx context.Context, st Store, f nostr.Filter) []*nostr.Event {
	var out []*nostr.Event
	for ev, err := range st.Find(ctx, f) {
		if err != nil {
			break
		}
		out = append(out, ev)
	}
	return out
}

// Field caps keep a hostile profile from bloating our records.
const (
	maxField   = 256
	maxPicture = 2048
)

// Parse reads a kind-0 event's content; ok is false when it is not a JSON
// object. Fields of the wrong type are left empty.
func Parse(ev *nostr.Event) (*Profile, bool) {
	if ev.Kind != 0 {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(ev.Content), &m); err != nil {
		return nil, false
	}
	str := func(max int, keys ...string) string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				s = strings.TrimSpace(s)
				if len(s) > max {
					return ""
				}
				return s
			}
		}
		return ""
	}
	return &Profile{
		Name:        str(maxField, "name"),
		DisplayName: str(maxField, "display_name", "displayName"),
		Picture:     str(maxPicture, "picture"),
		NIP05:       strings.ToLower(str(maxField, "nip05")),
		LUD16:       strings.ToLower(str(maxField, "lud16")),
		EventID:     ev.ID,
		CreatedAt:   int64(ev.CreatedAt),
	}, true
}
