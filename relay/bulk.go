package relay

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/tidwall/gjson"
)

// Events in bulk: importing them from a file (outpost import, with outpost
// stopped: the same admission as an upstream relay's events get, a batch to a
// transaction) and exporting them (outpost export).

// ImportResult is what became of one event given to Import.
type ImportResult struct {
	Reason  string         // why it was refused, in the words of an OK message; "" if it was not
	Outcome events.Outcome // what the store did with it, when it was not refused
}

// refusedEphemeral: the relay only broadcasts an ephemeral event, and an
// import has no one to broadcast to.
const refusedEphemeral = "invalid: ephemeral events are not stored"

// DecodeEvent decodes one event object, as the relay decodes the event of
// an EVENT message: over max_message_length, not JSON, or not an event is
// refused, with the reason an OK message would give.
func (r *Relay) DecodeEvent(line []byte) (*nostr.Event, string) {
	if r.limits.MaxMessageLength > 0 && len(line) > r.limits.MaxMessageLength {
		return nil, "invalid: the event is over max_message_length"
	}
	if !gjson.ValidBytes(line) {
		return nil, "invalid: not JSON"
	}
	return message{gjson.ParseBytes(line)}.event(0)
}

// Import takes in a batch of events. Each is checked as accept checks an
// upstream relay's (check with fromUpstream: sizes, signature, NIP-70,
// NIP-40, the ban list, NIP-09, the services' RejectEvent), and against the
// deletion requests earlier in the batch; what passes is written in one transaction (events.Store.SaveBatch), and then
// the deletion requests among it delete what they name, as accept's do.
// Nothing is broadcast and no OnEventSaved hook runs: the services are not
// running. err is the store's failure: then the batch is not stored, or
// only its first part if the store split it (see SaveBatch); importing it
// again stores the rest.
//
// keepProtected takes protected events (NIP-70) in as if their authors had
// sent them: the operator vouches for the file (the relay it comes from took
// them from their authors). Without it they are refused, as from a relay.
func (r *Relay) Import(ctx context.Context, evs []*nostr.Event, keepProtected bool) ([]ImportResult, error) {
	if !r.gate.enter() {
		return nil, errShuttingDown
	}
	defer r.gate.exit()
	res := r.checkAll(ctx, evs, keepProtected)
	var keep []*nostr.Event
	var at []int
	pending := pendingDeletions{}
	for i, ev := range evs {
		if res[i].Reason == "" && pending.deletes(ev) {
			res[i].Reason = refusedDeleted
		}
		if res[i].Reason == "" {
			pending.add(ev)
			keep, at = append(keep, ev), append(at, i)
		}
	}
	out, bad, err := r.store.Events.SaveBatch(ctx, keep)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		if bad[j] != nil {
			res[i].Reason = nostr.NormalizeOKMessage(bad[j].Error(), "invalid")
			continue
		}
		res[i].Outcome = out[j]
		if keep[j].Kind == nostr.KindDeletion {
			r.deleteRequested(ctx, keep[j])
		}
	}
	return res, nil
}

// checkAll checks each event on its own, in parallel: the signatures are
// most of an import's work.
func (r *Relay) checkAll(ctx context.Context, evs []*nostr.Event, keepProtected bool) []ImportResult {
	res := make([]ImportResult, len(evs))
	workers := min(runtime.GOMAXPROCS(0), len(evs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(evs); i += workers {
				res[i].Reason = r.checkImported(ctx, evs[i], keepProtected)
			}
		})
	}
	wg.Wait()
	return res
}

// checkImported says why an imported event is refused, if it is.
func (r *Relay) checkImported(ctx context.Context, ev *nostr.Event, keepProtected bool) string {
	from := fromUpstream
	if keepProtected {
		from.authed = []string{ev.PubKey}
	}
	if reason := r.check(ctx, from, ev); reason != "" {
		return reason
	}
	if nostr.IsEphemeralKind(ev.Kind) {
		return refusedEphemeral
	}
	return ""
}

// pendingDeletions are what the deletion requests of a batch name, before
// the batch is stored: deleted's lookups cannot see them yet. Keys are the
// requester's pubkey and an id, or an address with the request's
// created_at, the latest one's.
type pendingDeletions map[string]nostr.Timestamp

func (p pendingDeletions) add(del *nostr.Event) {
	if del.Kind != nostr.KindDeletion {
		return
	}
	for _, tag := range del.Tags {
		if len(tag) >= 2 && (tag[0] == "e" || tag[0] == "a") {
			k := del.PubKey + " " + tag[1]
			p[k] = max(p[k], del.CreatedAt)
		}
	}
}

// deletes reports whether a deletion request in the batch names ev, as
// deleted does for stored ones.
func (p pendingDeletions) deletes(ev *nostr.Event) bool {
	if len(p) == 0 || ev.Kind == nostr.KindDeletion {
		return false
	}
	if _, ok := p[ev.PubKey+" "+ev.ID]; ok {
		return true
	}
	if !nostr.IsReplaceableKind(ev.Kind) && !nostr.IsAddressableKind(ev.Kind) {
		return false
	}
	at, ok := p[ev.PubKey+" "+addressOf(ev)]
	return ok && at >= ev.CreatedAt
}

// addressOf is a replaceable or addressable event's address, as an "a" tag
// names it.
func addressOf(ev *nostr.Event) string {
	return strconv.Itoa(ev.Kind) + ":" + ev.PubKey + ":" + ev.Tags.GetD()
}

// Export yields the events matching f as a REQ would answer it, newest
// first, but with no limit unless f has one: never an expired one, nor one
// the ban list hides (a banned author's, an event a moderator removed). raw
// is the event's JSON, valid only during yield.
func (r *Relay) Export(ctx context.Context, f nostr.Filter, yield func(raw []byte) bool) error {
	return r.events.Query(ctx, f, r.hiddenAt(time.Now().Unix()), func(_ Meta, raw []byte) bool { return yield(raw) })
}
