package publish

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
)

// Outbox forwards the events outpost signs to other relays. Only the latest
// event of each address waits to be sent (an older version of a list is
// worth nothing once a newer one exists); a relay that is away gets the
// latest of each when it is back.
type Outbox struct {
	relays []string
	log    *slog.Logger

	mu      sync.Mutex
	pending map[string]map[string]*nostr.Event // relay → address → event
	wake    map[string]chan struct{}
}

// NewOutbox returns an outbox for relays; Run sends.
func NewOutbox(relays []string, log *slog.Logger) *Outbox {
	o := &Outbox{relays: relays, log: cmp.Or(log, slog.Default()), pending: map[string]map[string]*nostr.Event{},
		wake: map[string]chan struct{}{}}
	for _, r := range relays {
		o.pending[r] = map[string]*nostr.Event{}
		o.wake[r] = make(chan struct{}, 1)
	}
	return o
}

// Send queues ev for every relay.
func (o *Outbox) Send(ev *nostr.Event) {
	addr := ev.ID
	if ev.Kind >= 10000 && ev.Kind < 20000 || ev.Kind >= 30000 && ev.Kind < 40000 {
		addr = fmt.Sprintf("%d:%s:%s", ev.Kind, ev.PubKey, ev.Tags.GetD())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.relays {
		o.pending[r][addr] = ev
		select {
		case o.wake[r] <- struct{}{}:
		default:
		}
	}
}

// Run sends to every relay until ctx ends.
func (o *Outbox) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range o.relays {
		wg.Go(func() {
			var b nostrclient.Backoff
			for ctx.Err() == nil {
				b.Start()
				err := o.deliver(ctx, r)
				if ctx.Err() != nil {
					return
				}
				o.log.Info("publish: relay unreachable", "relay", r, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(b.Next()):
				}
			}
		})
	}
	wg.Wait()
}

// deliver keeps one connection to relay and sends what is pending.
func (o *Outbox) deliver(ctx context.Context, relay string) error {
	c, err := nostrclient.Dial(ctx, relay, nostrclient.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		o.mu.Lock()
		batch := maps.Clone(o.pending[relay])
		o.mu.Unlock()
		for addr, ev := range batch {
			sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			ok, reason, err := c.Publish(sctx, ev)
			cancel()
			if err != nil {
				return err
			}
			if !ok {
				o.log.Warn("publish: relay refused an event", "relay", relay, "kind", ev.Kind, "reason", reason)
			}
			o.mu.Lock()
			if o.pending[relay][addr] == ev {
				delete(o.pending[relay], addr)
			}
			o.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.wake[relay]:
		case _, open := <-c.Messages():
			// Nothing was asked: what the relay says is dropped. The
			// channel closes when the connection ends (nostrclient hangs
			// up on a relay that stops answering its pings).
			if !open {
				return c.Err()
			}
		}
	}
}
