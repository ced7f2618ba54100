package publish

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
)

// Outbox forwards the events outpost signs to other relays. Only the latest
// event of each address waits to be sent (an older version of a list is
// worth nothing once a newer one exists); a relay that is away gets the
// latest of each when it is back. Every OK is read: an event a relay
// refuses (too big, too many tags, rate-limited) waits to be tried again,
// a little later each time, until it is taken or a newer version replaces
// it, and State tells who refused what.
type Outbox struct {
	relays []string
	log    *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	pending map[string]map[string]*queued // relay → address → event
	wake    map[string]chan struct{}
	states  map[string]*RelayState
}

// queued is an event waiting for one relay.
type queued struct {
	ev      *nostr.Event
	due     time.Time // not before; zero: at once
	refused int       // times the relay refused it
	reason  string    // the relay's last refusal
}

// RelayState is how sending to one relay goes.
type RelayState struct {
	Relay     string
	Published uint64    // events the relay took (OK true)
	Refused   uint64    // refusals (OK false), every try counted
	Down      string    // why the last connection failed or ended; "" while it is up or before the first
	Refusals  []Refusal // events the relay refused, waiting to be tried again
}

// Refusal is an event a relay refused, and why.
type Refusal struct {
	Kind   int
	D      string
	Reason string
	Tries  int
}

// Back-off of a refused event: doubling from refusedRetry up to refusedRetryMax.
const (
	refusedRetry    = 5 * time.Second
	refusedRetryMax = 5 * time.Minute
	publishTimeout  = 15 * time.Second // for one event's OK: a relay cannot stretch it
)

// NewOutbox returns an outbox for relays; Run sends.
func NewOutbox(relays []string, log *slog.Logger) *Outbox {
	o := &Outbox{relays: relays, log: cmp.Or(log, slog.Default()), now: time.Now, pending: map[string]map[string]*queued{},
		wake: map[string]chan struct{}{}, states: map[string]*RelayState{}}
	for _, r := range relays {
		o.pending[r] = map[string]*queued{}
		o.wake[r] = make(chan struct{}, 1)
		o.states[r] = &RelayState{Relay: r}
	}
	return o
}

// Send queues ev for every relay, in place of an older version of its
// address.
func (o *Outbox) Send(ev *nostr.Event) {
	addr := ev.ID
	if ev.Kind >= 10000 && ev.Kind < 20000 || ev.Kind >= 30000 && ev.Kind < 40000 {
		addr = fmt.Sprintf("%d:%s:%s", ev.Kind, ev.PubKey, ev.Tags.GetD())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.relays {
		o.pending[r][addr] = &queued{ev: ev}
		o.poke(r)
	}
}

func (o *Outbox) poke(relay string) {
	select {
	case o.wake[relay] <- struct{}{}:
	default:
	}
}

// State is how sending to each relay goes, in the order of the relays.
func (o *Outbox) State() []RelayState {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]RelayState, 0, len(o.relays))
	for _, r := range o.relays {
		st := *o.states[r]
		st.Refusals = nil
		for _, q := range o.pending[r] {
			if q.refused > 0 {
				st.Refusals = append(st.Refusals, Refusal{Kind: q.ev.Kind, D: q.ev.Tags.GetD(), Reason: q.reason, Tries: q.refused})
			}
		}
		out = append(out, st)
	}
	return out
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
				o.mu.Lock()
				o.states[r].Down = err.Error()
				o.mu.Unlock()
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

// deliver keeps one connection to relay and sends what is pending and due.
func (o *Outbox) deliver(ctx context.Context, relay string) error {
	c, err := nostrclient.Dial(ctx, relay, nostrclient.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	o.mu.Lock()
	o.states[relay].Down = ""
	o.mu.Unlock()
	for {
		batch, next := o.due(relay)
		for addr, q := range batch {
			sctx, cancel := context.WithTimeout(ctx, publishTimeout)
			ok, reason, err := c.Publish(sctx, q.ev)
			cancel()
			if err != nil {
				return fmt.Errorf("no OK for an event: %w", err)
			}
			o.answered(relay, addr, q, ok, reason)
		}
		timer := time.NewTimer(next)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-o.wake[relay]:
		case <-timer.C:
		case _, open := <-c.Messages():
			// Nothing was asked: what the relay says is dropped. The
			// channel closes when the connection ends (nostrclient hangs
			// up on a relay that stops answering its pings).
			if !open {
				timer.Stop()
				return c.Err()
			}
		}
		timer.Stop()
	}
}

// due is what waits for relay and may be sent now, and how long until the
// next of the rest is due (an hour when none).
func (o *Outbox) due(relay string) (batch map[string]*queued, next time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now, next := o.now(), time.Hour
	batch = map[string]*queued{}
	for addr, q := range o.pending[relay] {
		if wait := q.due.Sub(now); wait > 0 {
			next = min(next, wait)
			continue
		}
		batch[addr] = q
	}
	return batch, next
}

// answered records relay's OK for q: taken, it stops waiting (unless a
// newer version replaced it meanwhile); refused, it is tried again later.
func (o *Outbox) answered(relay, addr string, q *queued, ok bool, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.states[relay]
	if ok {
		st.Published++
		if o.pending[relay][addr] == q {
			delete(o.pending[relay], addr)
		}
		return
	}
	st.Refused++
	q.refused++
	q.reason = reason
	q.due = o.now().Add(min(refusedRetry<<min(q.refused-1, 10), refusedRetryMax))
	o.log.Warn("publish: relay refused an event; trying again later", "relay", relay, "kind", q.ev.Kind,
		"d", q.ev.Tags.GetD(), "reason", reason, "tries", q.refused)
}

// isListEvent says whether an event of kind at d is one of the ban list's:
// a page of keys or of words, or the mute list of earlier versions.
func isListEvent(kind int, d string) bool {
	return kind == KindMuteList || kind == KindBanPage && (strings.HasPrefix(d, banPagePrefix) || strings.HasPrefix(d, wordPagePrefix))
}

// BanListChecks are the ban list's health checks of its publish relays
// (banlist.Config.Publishing): a relay is in error while the last
// connection to it failed, or while it refuses a page (of keys or words) or the mute list.
func (o *Outbox) BanListChecks() []banlist.PublishCheck {
	var out []banlist.PublishCheck
	for _, st := range o.State() {
		c := banlist.PublishCheck{Relay: st.Relay, Published: st.Published, Refused: st.Refused}
		var why []string
		if st.Down != "" {
			why = append(why, "unreachable: "+st.Down)
		}
		for _, r := range st.Refusals {
			if isListEvent(r.Kind, r.D) {
				why = append(why, fmt.Sprintf("refused %s (kind %d) %d times, trying again: %s", cmp.Or(r.D, "the mute list"), r.Kind, r.Tries, r.Reason))
			}
		}
		if len(why) > 0 {
			slices.Sort(why)
			e := strings.Join(why, "; ")
			c.Error = &e
		}
		out = append(out, c)
	}
	return out
}
