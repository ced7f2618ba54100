package wot

import (
	"cmp"
	"context"
	"encoding/hex"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// KindUserAssertion is NIP-85's trusted assertion about a pubkey: an
// addressable event of the provider (here the service key) whose d tag is
// the subject and whose tags are the provider's metrics of it.
const KindUserAssertion = 30382

// maxAssertions bounds the assertions one round signs and sends: the
// members changed since the last round, nearest first, the rest next round.
const maxAssertions = 5_000

// Publisher publishes the members' standing as NIP-85 assertions (rank
// 0–100: the key's Weight × 100; followers) after each rank computation,
// at most once per Pause, only those that changed since it last published
// them, and rank 0 for a key no longer a member, so a client reading them
// never keeps a stale "trusted".
type Publisher struct {
	WoT       *WoT
	SecretKey string // hex, the service key
	Sink      func(ctx context.Context, ev *nostr.Event) error
	Pause     time.Duration // the least time between two rounds; default 10s
	Log       *slog.Logger

	last map[Key]assertion // what was published, by subject
}

type assertion struct{ rank, followers int }

// Run publishes what changed after each rank computation, until ctx ends.
func (p *Publisher) Run(ctx context.Context) {
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		if n, err := p.Publish(ctx); err != nil {
			p.Log.Warn("wot: NIP-85 assertions not all published", "published", n, "err", err)
		}
		pause.Reset(cmp.Or(p.Pause, 10*time.Second))
		select { // the pause, then the next rank computation
		case <-ctx.Done():
			return
		case <-pause.C:
		}
		select {
		case <-ctx.Done():
			return
		case <-p.WoT.ranked:
		}
	}
}

// Publish signs and sends the assertions that changed; it returns how many.
func (p *Publisher) Publish(ctx context.Context) (int, error) {
	if p.last == nil {
		p.last = map[Key]assertion{}
	}
	keys := p.WoT.memberKeys()
	now := make(map[Key]assertion, len(keys))
	for _, k := range keys {
		now[k] = assertion{rank: int(math.Round(100 * p.WoT.Weight(hex.EncodeToString(k[:])))), followers: p.WoT.Standing(k).Followers}
	}
	for k := range p.last {
		if _, ok := now[k]; !ok {
			now[k], keys = assertion{}, append(keys, k) // left the web of trust
		}
	}
	n := 0
	for _, k := range keys {
		if n == maxAssertions {
			break
		}
		if a, had := p.last[k]; had && a == now[k] {
			continue
		}
		if err := p.send(ctx, k, now[k]); err != nil {
			return n, err
		}
		n++
		if now[k] == (assertion{}) {
			delete(p.last, k)
		} else {
			p.last[k] = now[k]
		}
	}
	return n, nil
}

func (p *Publisher) send(ctx context.Context, k Key, a assertion) error {
	ev := &nostr.Event{Kind: KindUserAssertion, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"d", hex.EncodeToString(k[:])}, {"rank", strconv.Itoa(a.rank)}, {"followers", strconv.Itoa(a.followers)},
	}}
	if err := ev.Sign(p.SecretKey); err != nil {
		return err
	}
	return p.Sink(ctx, ev)
}

// memberKeys are the members' keys, the nearest first.
func (w *WoT) memberKeys() []Key {
	s := w.snap.Load()
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []Key
	for d := 0; d <= w.cfg.Depth; d++ {
		for id, h := range s.hops {
			if int(h) == d && s.member[id] {
				out = append(out, w.g.keys[id])
			}
		}
	}
	return out
}
