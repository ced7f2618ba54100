package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip40"
	"github.com/nbd-wtf/go-nostr/nip70"
	"github.com/outpost-relay/outpost/internal/storage/events"
)

// Admission: every event that enters the store comes through accept, from
// one of three origins (a client of ours, another relay, the service
// itself), or, from a file, through Import (bulk.go), which runs the same
// check in batches; each gets the same verdict in the same words for the same reason.
//
// The path of an EVENT (the files of this package it crosses, and the
// packages it calls); it never leaves the package to come back:
//
//	conn.go       serve reads the frame; handle splits it (parse.go) and
//	              onEvent decodes the event (parse.go)
//	admission.go  accept, holding the store's gate (gate.go): the rate
//	              limits (package ratelimit), form and sizes, the signature
//	              (signature.go), kind 22242 and NIP-70, NIP-40, the ban
//	              list (package policies), NIP-09 (deletion.go, a lookup
//	              through events.go), the services' RejectEvent (NIP-87,
//	              reports); then the store, through the writer
//	              (writer.go: one transaction for every event waiting,
//	              events.Store.SaveBatch; stored, duplicate or superseded,
//	              which the OK answer says)
//	deletion.go   a kind 5 deletes what it names
//	admission.go  the services' OnEventSaved; broadcast: the registry
//	              (subs.go, match.go) queues the event's frame (messages.go)
//	              on each subscriber's outbox (outbox.go)
//	conn.go       the OK answer (messages.go), then the observer (metrics)

// origin is where an event comes from. What is checked differs by origin
// only as these fields say, and fromClient, fromUpstream and fromService
// are all the origins there are.
type origin struct {
	limited bool     // the per-address and per-author rate limits apply
	ip      string   // the client's address (limited only)
	authed  []string // the keys the client authenticated as (NIP-42)
	checked bool     // form, signature, NIP-70 and every policy apply
}

// fromClient is an event a websocket client sent in an EVENT message.
func fromClient(ip string, authed []string) origin {
	return origin{limited: true, ip: ip, authed: authed, checked: true}
}

var (
	// fromUpstream is an event another relay sent (package upstream, by
	// Ingest): checked as a client's, but it spends no client's allowance,
	// and no author sent it, so a protected event (NIP-70) is refused.
	fromUpstream = origin{checked: true}
	// fromService is an event the service signed itself (Publish): it goes
	// to the store unchecked, so that the ban list's words, say, do not
	// refuse a report quoting them.
	fromService = origin{}
)

// The words of every refusal accept gives, with NIP-01's machine-readable
// prefix; the ban list's policies and the services' hooks say their own,
// and a failing store is "error: ...".
const (
	refusedPubKey          = "invalid: pubkey must be 64 lowercase hex characters"
	refusedSig             = "invalid: sig must be 128 lowercase hex characters"
	refusedID              = "invalid: the id is not the hash of the event"
	refusedKind            = "invalid: kind must be from 0 to 65535"
	refusedBeforeEpoch     = "invalid: created_at is negative"
	refusedFuture          = "invalid: created_at is more than %d seconds in the future"
	refusedTags            = "invalid: %d tags, at most %d allowed"
	refusedContent         = "invalid: content has %d characters, at most %d allowed"
	refusedTagValue        = "invalid: the value of a %q tag is over %d bytes"
	refusedSignature       = "invalid: the signature does not verify"
	refusedAuthEvent       = "invalid: kind-22242 events are sent in an AUTH message, never stored"
	refusedExpiration      = "invalid: the expiration tag must be a unix timestamp in seconds (NIP-40)"
	refusedExpired         = "invalid: this event has expired"
	refusedIPRate          = "rate-limited: too many events from your address; try again in %s"
	refusedAuthorRate      = "rate-limited: too many events from this key; try again in %s"
	refusedUnauthenticated = "auth-required: this event is protected (NIP-70); authenticate as its author"
	refusedProtected       = "restricted: a protected event (NIP-70) is only accepted from its author"
	refusedProtectedRepost = "blocked: reposts of protected events (NIP-70) are not accepted"
	refusedDeleted         = "blocked: this event was deleted by its author"
	refusedDeletionUnknown = "error: could not check whether this event was deleted; try again"
	refusedNoReason        = "blocked: no reason"
)

// accept takes an event into the store, unless it is refused, then acts on
// a deletion request, tells the services' OnEventSaved and broadcasts it.
// The outcome says whether it was stored, held already, or superseded (a
// newer version of its address is held, and it was not stored); only a
// stored one is broadcast. A refusal's error is what an OK message says; the
// service's own events get the store's error as it is.
func (r *Relay) accept(ctx context.Context, from origin, ev *nostr.Event) (events.Outcome, error) {
	if !r.gate.enter() {
		return 0, errShuttingDown
	}
	defer r.gate.exit()
	deletions := r.write.deletions.Load() // before check looks for deletion requests
	if reason := r.check(ctx, from, ev); reason != "" {
		return 0, errors.New(reason)
	}
	if nostr.IsEphemeralKind(ev.Kind) { // NIP-01: sent on, never stored
		r.broadcast(ev)
		return events.Stored, nil
	}
	out, later, batch, err := r.write.save(ctx, ev, from.checked, deletions)
	if err != nil {
		return 0, err
	}
	if out == events.Stored {
		defer r.write.broadcasted(batch, 1) // on every way out: REQs wait for it
	}
	if from.checked && out == events.Stored && later {
		if err := r.deletedSince(ctx, ev); err != nil {
			return 0, err
		}
	}
	if ev.Kind == nostr.KindDeletion && out != events.Superseded {
		r.deleteRequested(ctx, ev) // again for a duplicate: harmless, and finishes what failed before
	}
	if out != events.Stored {
		return out, nil
	}
	if from.checked {
		for _, saved := range r.OnEventSaved {
			saved(ctx, ev)
		}
	}
	r.broadcast(ev)
	return out, nil
}

// What an OK message says of an event held already, and of an older
// version of an address (replaceable or addressable) than the one held:
// that one was not stored, so the answer is false, in strfry's words.
const (
	acceptedDuplicate = "duplicate: already have this event"
	refusedSuperseded = "replaced: have newer event"
)

// answer is what an OK message says of accept's result.
func answer(out events.Outcome, err error) (ok bool, reason string) {
	switch {
	case err != nil:
		return false, nostr.NormalizeOKMessage(err.Error(), "error")
	case out == events.Duplicate:
		return true, acceptedDuplicate
	case out == events.Superseded:
		return false, refusedSuperseded
	}
	return true, ""
}

// Ingest takes in an event another relay sent (package upstream). ok and
// reason are what an OK message would say ("duplicate: ..." for an event
// already held, false and "replaced: ..." for an older version of an
// address than the one held).
func (r *Relay) Ingest(ctx context.Context, ev *nostr.Event) (ok bool, reason string) {
	return answer(r.accept(ctx, fromUpstream, ev))
}

// ErrSuperseded is Publish's error for an older version of an address
// (replaceable or addressable) than the one held: it was not stored.
var ErrSuperseded = errors.New(refusedSuperseded)

// Publish stores an event the service made itself and sends it to matching
// subscriptions, skipping every check (fromService); an event already held
// is eventstore.ErrDupEvent, an older version of an address than the one
// held ErrSuperseded. It never waits for a subscriber.
func (r *Relay) Publish(ctx context.Context, ev *nostr.Event) error {
	switch out, err := r.accept(ctx, fromService, ev); {
	case err != nil:
		return err
	case out == events.Duplicate:
		return eventstore.ErrDupEvent
	case out == events.Superseded:
		return ErrSuperseded
	}
	return nil
}

// check says why an event from a given origin is refused, if it is; the
// policies come last, as they may read the store.
func (r *Relay) check(ctx context.Context, from origin, ev *nostr.Event) string {
	if !from.checked {
		return ""
	}
	if from.limited {
		if ok, wait := r.ipEvents.Allow(from.ip); !ok {
			return fmt.Sprintf(refusedIPRate, roundUp(wait))
		}
	}
	if reason := r.limits.checkEvent(ev); reason != "" {
		return reason
	}
	if !r.keys.verify(ev) {
		return refusedSignature
	}
	// After the signature: nobody can spend someone else's allowance.
	if from.limited {
		if ok, wait := r.authorEvents.Allow(ev.PubKey); !ok {
			return fmt.Sprintf(refusedAuthorRate, roundUp(wait))
		}
	}
	if reason := checkAuthorship(from, ev); reason != "" {
		return reason
	}
	return r.checkPolicies(ctx, ev)
}

// checkAuthorship refuses what is never stored (NIP-42's AUTH events) and
// protected events (NIP-70) not sent by their author.
func checkAuthorship(from origin, ev *nostr.Event) string {
	switch {
	case ev.Kind == nostr.KindClientAuthentication:
		return refusedAuthEvent
	case nip70.IsProtected(*ev):
		switch {
		case slices.Contains(from.authed, ev.PubKey):
			return ""
		case from.limited && len(from.authed) == 0:
			return refusedUnauthenticated // and the client is asked to authenticate
		}
		return refusedProtected
	case nip70.HasEmbeddedProtected(*ev):
		return refusedProtectedRepost
	}
	return ""
}

// checkPolicies runs the policies, in order: NIP-40, the ban list's,
// NIP-09 (a store lookup), the services' RejectEvent.
func (r *Relay) checkPolicies(ctx context.Context, ev *nostr.Event) string {
	if reason := checkExpiration(ev); reason != "" {
		return reason
	}
	if reason := refusal(ctx, r.banPolicies, ev); reason != "" {
		return reason
	}
	deleted, err := r.deleted(ctx, ev)
	if err != nil {
		r.log.Warn("NIP-09: looking up deletion requests", "event", ev.ID, "err", err)
		return refusedDeletionUnknown
	}
	if deleted {
		return refusedDeleted
	}
	return refusal(ctx, r.RejectEvent, ev)
}

// refusal is what the first of policies to refuse ev says, "blocked:"
// unless it says another of NIP-01's prefixes; "" when none refuses.
func refusal(ctx context.Context, policies []func(context.Context, *nostr.Event) (bool, string), ev *nostr.Event) string {
	for _, reject := range policies {
		if refused, msg := reject(ctx, ev); refused {
			if msg == "" {
				return refusedNoReason
			}
			return nostr.NormalizeOKMessage(msg, "blocked")
		}
	}
	return ""
}

// checkExpiration refuses events whose NIP-40 expiration has passed, or is
// not a unix timestamp: go-nostr reads one as "no expiration", so the event
// would be kept forever although its author meant it to go.
func checkExpiration(ev *nostr.Event) string {
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == "expiration" && !isTimestamp(t[1:]) {
			return refusedExpiration
		}
	}
	if exp := nip40.GetExpiration(ev.Tags); exp != -1 && exp <= nostr.Now() {
		return refusedExpired
	}
	return ""
}

// isTimestamp reports whether a tag's values start with a base-10 integer.
func isTimestamp(values []string) bool {
	if len(values) == 0 {
		return false
	}
	_, err := strconv.ParseInt(values[0], 10, 64)
	return err == nil
}

// checkEvent checks an event's form and size; it says why it is refused.
func (l Limits) checkEvent(ev *nostr.Event) string {
	if !isHex(ev.PubKey, 64) {
		return refusedPubKey
	}
	if !isHex(ev.Sig, 128) {
		return refusedSig
	}
	if !isHex(ev.ID, 64) || !ev.CheckID() {
		return refusedID
	}
	if ev.Kind < 0 || ev.Kind > 65535 {
		return refusedKind
	}
	if ev.CreatedAt < 0 {
		return refusedBeforeEpoch
	}
	if ev.CreatedAt > nostr.Now()+nostr.Timestamp(maxFuture/time.Second) {
		return fmt.Sprintf(refusedFuture, int(maxFuture/time.Second))
	}
	if l.MaxEventTags > 0 && len(ev.Tags) > l.MaxEventTags {
		return fmt.Sprintf(refusedTags, len(ev.Tags), l.MaxEventTags)
	}
	if l.MaxContentLength > 0 && len(ev.Content) > l.MaxContentLength {
		if n := utf8.RuneCountInString(ev.Content); n > l.MaxContentLength {
			return fmt.Sprintf(refusedContent, n, l.MaxContentLength)
		}
	}
	for _, tag := range ev.Tags {
		if len(tag) > 1 && len(tag[0]) == 1 && len(tag[1]) > maxTagValue {
			return fmt.Sprintf(refusedTagValue, tag[0], maxTagValue)
		}
	}
	return ""
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// roundUp says how long to wait, in whole seconds.
func roundUp(d time.Duration) string {
	return fmt.Sprintf("%ds", int((d+time.Second-1)/time.Second))
}

// broadcast sends an accepted event to every subscription it matches, once
// each, encoding it once. It never waits for a client.
func (r *Relay) broadcast(ev *nostr.Event) {
	m := metaOf(ev)
	if r.hidden(m, time.Now().Unix()) {
		return
	}
	body, err := ev.MarshalJSON()
	if err != nil {
		return
	}
	r.subs.broadcast(ev, m, body)
}

// hidden reports whether an event is kept from readers at now: its author
// is banned, or a moderator removed it. Nothing is deleted; when the ban
// lifts the events are served again.
func (r *Relay) hidden(m Meta, now int64) bool {
	return r.banList != nil && r.banList.Hides(m.ID, m.PubKey, now)
}

// hiddenAt is hidden with the clock read once, for a query that asks it of
// every event it reads.
func (r *Relay) hiddenAt(now int64) func(Meta) bool {
	return func(m Meta) bool { return r.hidden(m, now) }
}
