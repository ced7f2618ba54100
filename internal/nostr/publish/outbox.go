package publish

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/tidwall/gjson"
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
	offered bool      // signed before a restart: sent only if the relay lacks it (Offer)
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
	publishTimeout  = 15 * time.Second // for the OKs of events sent together: a relay cannot stretch it
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
	addr := addressOf(ev)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.relays {
		o.pending[r][addr] = &queued{ev: ev}
		o.poke(r)
	}
}

// Offer queues ev, signed before a restart, for every relay that lacks
// it: the queue of a process that stopped is gone, and a relay that was
// away or refused an event then would otherwise never get it, since an
// unchanged page is not signed again. Before sending offered events the
// outbox asks the relay (NIP-45 COUNT) which of them it holds, so a
// restart sends nothing a relay holds already. Offer never replaces what
// Send queued.
func (o *Outbox) Offer(ev *nostr.Event) {
	addr := addressOf(ev)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.relays {
		if _, ok := o.pending[r][addr]; !ok {
			o.pending[r][addr] = &queued{ev: ev, offered: true}
			o.poke(r)
		}
	}
}

// addressOf is what a newer event replaces ev at: its address when it is
// replaceable or addressable, its id when not.
func addressOf(ev *nostr.Event) string {
	if nostr.IsReplaceableKind(ev.Kind) || nostr.IsAddressableKind(ev.Kind) {
		return fmt.Sprintf("%d:%s:%s", ev.Kind, ev.PubKey, ev.Tags.GetD())
	}
	return ev.ID
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
	held := heldAsker{c: c}
	for {
		batch, next := o.due(relay)
		o.dropHeld(ctx, relay, batch, &held)
		if err := o.sendBatch(ctx, c, relay, batch); err != nil {
			return err
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

// inFlight is how many events are sent to a relay before their OKs are
// read: one at a time, a republished list of thousands of pages took
// minutes on round trips alone.
const inFlight = 32

// sendBatch sends batch to relay, inFlight events at a time, and records
// each OK; the OKs of each group are awaited under publishTimeout, which a
// relay cannot stretch.
func (o *Outbox) sendBatch(ctx context.Context, c *nostrclient.Conn, relay string, batch map[string]*queued) error {
	for group := range slices.Chunk(slices.Sorted(maps.Keys(batch)), inFlight) {
		waiting := map[string]string{} // event id → address
		for _, addr := range group {
			if err := c.Send(ctx, "EVENT", batch[addr].ev); err != nil {
				return err
			}
			waiting[batch[addr].ev.ID] = addr
		}
		if err := o.awaitOKs(ctx, c, relay, batch, waiting); err != nil {
			return err
		}
	}
	return nil
}

// awaitOKs reads the relay's OKs for the events waiting, what else it says
// dropped.
func (o *Outbox) awaitOKs(ctx context.Context, c *nostrclient.Conn, relay string, batch map[string]*queued, waiting map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	for len(waiting) > 0 {
		m, err := c.Next(ctx)
		if err != nil {
			return fmt.Errorf("no OK for %d events: %w", len(waiting), err)
		}
		if addr, ok := waiting[m.Sub]; ok && m.Label == "OK" {
			delete(waiting, m.Sub)
			o.answered(relay, addr, batch[addr], m.OK, m.Text)
		}
	}
	return nil
}

// dropHeld takes the offered events of batch that relay holds out of
// batch and of what waits for it.
func (o *Outbox) dropHeld(ctx context.Context, relay string, batch map[string]*queued, held *heldAsker) {
	var offered []string
	byID := map[string]string{}
	for addr, q := range batch {
		if q.offered {
			offered = append(offered, q.ev.ID)
			byID[q.ev.ID] = addr
		}
	}
	if len(offered) == 0 {
		return
	}
	slices.Sort(offered) // the same questions for the same events, whatever the map's order
	lacking := map[string]bool{}
	for chunk := range slices.Chunk(offered, countBatch) {
		for _, id := range held.lacking(ctx, chunk) {
			lacking[id] = true
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range offered {
		if addr := byID[id]; !lacking[id] {
			if o.pending[relay][addr] == batch[addr] {
				delete(o.pending[relay], addr)
			}
			delete(batch, addr)
		}
	}
}

// countBatch is how many ids one COUNT names: under the values strfry
// takes in one filter (200).
const countBatch = 100

// heldAsker asks a relay which events it holds, by NIP-45 COUNT, each
// answer under countTimeout. A relay that does not answer one (no COUNT
// support, or a hostile one) is not asked again on this connection: it is
// then sent everything offered, which it keeps once.
type heldAsker struct {
	c      *nostrclient.Conn
	n      int
	failed bool
}

const countTimeout = 5 * time.Second

// lacking are the ids the relay does not hold: all of them when it cannot
// say. A chunk held in part is halved until each half is held whole or
// not at all, so a few missing events cost a few questions.
func (h *heldAsker) lacking(ctx context.Context, ids []string) []string {
	if h.failed {
		return ids
	}
	n, err := h.count(ctx, ids)
	switch {
	case err != nil:
		h.failed = true
		return ids
	case n >= len(ids):
		return nil
	case n == 0 || len(ids) == 1:
		return ids
	}
	half := len(ids) / 2
	// Concat, not append: a half that lacks everything is ids itself, a
	// window on the caller's slice that append would write over.
	return slices.Concat(h.lacking(ctx, ids[:half]), h.lacking(ctx, ids[half:]))
}

// count asks how many of ids the relay holds.
func (h *heldAsker) count(ctx context.Context, ids []string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, countTimeout)
	defer cancel()
	h.n++
	sub := fmt.Sprint("held-", h.n)
	if err := h.c.Send(ctx, "COUNT", sub, nostr.Filter{IDs: ids}); err != nil {
		return 0, err
	}
	for {
		m, err := h.c.Next(ctx)
		if err != nil {
			return 0, err
		}
		switch {
		case m.Label == "NOTICE":
			return 0, fmt.Errorf("COUNT answered with a notice: %s", m.Text)
		case m.Sub != sub:
		case m.Label == "COUNT":
			if c := gjson.Get(m.Text, "count"); c.Type == gjson.Number {
				return int(c.Int()), nil
			}
			return 0, fmt.Errorf("COUNT answered %s", m.Text)
		default: // CLOSED
			return 0, fmt.Errorf("COUNT refused: %s", m.Text)
		}
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
