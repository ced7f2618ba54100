// Package publish puts what outpost knows on Nostr, signed by its service
// key: the ban list as NIP-51 lists (BanList), and the status of every mint
// the directory monitors with a monitor announcement (Mints), modelled on
// NIP-66. Events go to outpost's own relay (its subscribers get them
// pushed) and, with OUTPOST_PUBLISH_RELAYS, to other relays (Outbox).
//
// The kinds and tags are a small spec of their own, in docs/network.md
// ("Published events").
package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/mintdir"
)

// Kinds outpost publishes. 30000 and 10000 are NIP-51's; the mint kinds
// are outpost's own, numbered after NIP-66's relay kinds (30166, 10166)
// in the NIP-87 range.
const (
	KindBanPage     = 30000                  // NIP-51 follow set: one page of banned keys
	KindMuteList    = 10000                  // NIP-51 mute list: the blocked words
	KindMintStatus  = mintdir.KindMintStatus // one mint's status, d = its canonical URL
	KindMintMonitor = 18166                  // how the monitor checks
	banPagePrefix   = "outpost-bans-"
	wordPagePrefix  = "outpost-words-"
)

// Settings are the publishing settings, bound by cmd/outpost.
type Settings struct {
	Relays []string `flag:"publish-relays" usage:"relays (ws:// or wss://, comma-separated) that get the ban list and mint status events outpost signs"`
}

// Valid checks the settings, naming a bad one.
func (s *Settings) Valid() error {
	var errs []error
	for i, r := range s.Relays {
		u, err := upstream.ValidRelayURL(r)
		if err != nil {
			errs = append(errs, settings.Errorf("publish-relays", "%v", err))
		}
		s.Relays[i] = u
	}
	return errors.Join(errs...)
}

// logFailure logs a failed publication: as an error, except while the disk
// is low, which the store has already warned of once (the event is tried
// again later either way).
func logFailure(log *slog.Logger, msg string, err error, args ...any) {
	log.Log(context.Background(), kv.FailureLevel(err), msg, append(args, "err", err)...)
}

// Sink takes a signed event: outpost's relay stores and broadcasts it, an
// Outbox forwards it.
type Sink func(ctx context.Context, ev *nostr.Event) error

// signer signs replaceable events so that each replaces the last one of
// its address: created_at never goes back, nor repeats.
type signer struct {
	sk, pk string
	last   map[string]nostr.Timestamp // address → created_at of the last one
}

func newSigner(sk string) (*signer, error) {
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		return nil, fmt.Errorf("service key: %w", err)
	}
	return &signer{sk: sk, pk: pk, last: map[string]nostr.Timestamp{}}, nil
}

func (s *signer) sign(kind int, d string, tags nostr.Tags, content string, now nostr.Timestamp) (*nostr.Event, error) {
	addr := fmt.Sprintf("%d:%s", kind, d)
	at := max(now, s.last[addr]+1)
	ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content}
	if err := ev.Sign(s.sk); err != nil {
		return nil, err
	}
	s.last[addr] = at
	return ev, nil
}

// published loads what this key published of kind before (the newest of
// each address), so a restart republishes only what changed.
func (s *signer) published(ctx context.Context, st *events.Store, kind int) (map[string]*nostr.Event, error) {
	out := map[string]*nostr.Event{}
	err := s.load(ctx, st, kind, func(d string, ev *nostr.Event) {
		if cur, ok := out[d]; !ok || ev.CreatedAt > cur.CreatedAt {
			out[d] = ev
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// load calls fn with each event this key published of kind before, all
// of them (a restart that missed some would republish them), and notes
// their created_at so no later version is signed older.
func (s *signer) load(ctx context.Context, st *events.Store, kind int, fn func(d string, ev *nostr.Event)) error {
	if st == nil {
		return nil
	}
	for ev, err := range st.Find(ctx, nostr.Filter{Kinds: []int{kind}, Authors: []string{s.pk}}) {
		if err != nil {
			return err
		}
		d := ev.Tags.GetD()
		addr := fmt.Sprintf("%d:%s", kind, d)
		s.last[addr] = max(s.last[addr], ev.CreatedAt)
		fn(d, ev)
	}
	return nil
}

// sameTags: the event would say nothing new.
func sameTags(a, b nostr.Tags) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

func clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}
