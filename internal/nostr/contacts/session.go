package contacts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
)

const (
	authorsPerFilter = 250
	filtersPerREQ    = 10
	// skew: the live subscription's since, and a catch-up after a
	// reconnect, go back this far: clocks differ.
	skew = time.Minute
)

var errTimeout = errors.New("the relay did not end its stored events in time")

// A session is one connection to a relay.
type session struct {
	f     *Fetcher
	r     *relay
	c     *nostrclient.Conn
	subs  map[string]nostr.Filters // ours: the live ones and the fetch under way
	live  []string                 // the authors the live subscriptions cover
	asked map[string]bool          // authors whose lists this connection asked for
	seq   int
	// fetched: at least one request ended (EOSE), so the connection was
	// of use and the back-off starts again.
	fetched bool
}

// session connects to r, asks for the lists of the authors not asked for
// yet on this connection and follows them live, until the connection fails
// or ctx ends.
func (f *Fetcher) session(ctx context.Context, r *relay) (progressed bool, err error) {
	c, err := nostrclient.Dial(ctx, r.url, nostrclient.Options{DialTimeout: f.cfg.DialTimeout})
	if err != nil {
		return false, err
	}
	defer c.Close()
	ss := &session{f: f, r: r, c: c, subs: map[string]nostr.Filters{}, asked: map[string]bool{}}
	since := nostr.Timestamp(r.lost.Add(-skew).Unix()) // what the last connection's live subscriptions missed
	defer func() {
		if ss.live != nil {
			r.lost = f.cfg.Now()
		}
	}()
	for {
		changed := f.wait() // before Authors is read: a change from here on is heard
		authors := slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(f.cfg.Authors(ctx)))), func(a string) bool { return r.tooBig[a] })
		if err := ss.subscribe(ctx, authors); err != nil {
			return ss.fetched, err
		}
		if err := ss.catchUp(ctx, authors, since); err != nil {
			return ss.fetched, err
		}
		if err := ss.listen(ctx, changed); err != nil {
			return ss.fetched, err
		}
	}
}

// subscribe opens live subscriptions for authors' lists from now on, in
// place of those open, unless they cover the same authors. It does not
// wait for their EOSE: they ask for nothing stored.
func (ss *session) subscribe(ctx context.Context, authors []string) error {
	if ss.live != nil && slices.Equal(authors, ss.live) {
		return nil
	}
	for sub := range ss.subs {
		if isLive(sub) {
			ss.c.Send(ctx, "CLOSE", sub)
			delete(ss.subs, sub)
		}
	}
	since := nostr.Timestamp(ss.f.cfg.Now().Add(-skew).Unix())
	filters := byAuthors(authors, &since)
	for i := range filters {
		// (go-nostr sends a Limit that is not 0 even with LimitZero)
		filters[i].Limit, filters[i].LimitZero = 0, true
	}
	for chunk := range slices.Chunk(filters, filtersPerREQ) {
		sub := ss.newSub("live")
		ss.subs[sub] = chunk
		if err := ss.c.Req(ctx, sub, chunk...); err != nil {
			return err
		}
	}
	ss.live = authors
	return nil
}

// catchUp asks for the stored lists of the authors this connection has not
// asked for: in full for those never asked of the relay, since the last
// connection was lost for the others.
func (ss *session) catchUp(ctx context.Context, authors []string, since nostr.Timestamp) error {
	if err := ss.fetchAll(ctx, ss.suspects()); err != nil { // first: it may find a list too big
		return err
	}
	var fresh, again []string
	for _, a := range authors {
		switch {
		case ss.asked[a], ss.r.tooBig[a]:
		case ss.r.fetched[a]:
			again = append(again, a)
		default:
			fresh = append(fresh, a)
		}
	}
	return ss.fetchAll(ctx, slices.Concat(byAuthors(fresh, nil), byAuthors(again, &since)))
}

// fetchAll fetches each filter in turn. When a message too big to read
// ends the connection, the filter's authors are suspects.
func (ss *session) fetchAll(ctx context.Context, filters []nostr.Filter) error {
	for _, f := range filters {
		err := ss.fetch(ctx, f)
		if errors.Is(err, nostrclient.ErrMessageTooBig) {
			ss.r.suspects = f.Authors
		}
		if err != nil {
			return err
		}
		for _, a := range f.Authors {
			ss.asked[a], ss.r.fetched[a] = true, true
		}
	}
	return nil
}

// suspects are the requests for the authors of the last request answered
// by a message too big to read: a half of them each, or none when one
// author was left, whose list it was. (A too big message on a live
// subscription is blamed on the fetch under way, if any: then a key may be
// left out wrongly, for as long as the process runs.)
func (ss *session) suspects() []nostr.Filter {
	s := ss.r.suspects
	ss.r.suspects = nil
	if len(s) == 1 {
		ss.f.cfg.Log.Warn("wot: a contact list bigger than a relay message may be; not asked for again", "relay", ss.r.url, "pubkey", s[0])
		ss.r.tooBig[s[0]] = true
		return nil
	}
	half := (len(s) + 1) / 2
	return slices.Concat(byAuthors(s[:half], nil), byAuthors(s[half:], nil))
}

// byAuthors are the contact-list filters of authors, in chunks a relay
// will take, each asking for one list an author.
func byAuthors(authors []string, since *nostr.Timestamp) []nostr.Filter {
	var fs []nostr.Filter
	for chunk := range slices.Chunk(authors, authorsPerFilter) {
		fs = append(fs, nostr.Filter{Kinds: []int{nostr.KindFollowList}, Authors: chunk, Since: since, Limit: len(chunk)})
	}
	return fs
}

// fetch sends one REQ and takes its events in until its EOSE, which must
// come within Timeout from the REQ, however the relay paces what it sends.
func (ss *session) fetch(ctx context.Context, f nostr.Filter) error {
	ctx, cancel := context.WithTimeoutCause(ctx, ss.f.cfg.Timeout, errTimeout)
	defer cancel()
	sub := ss.newSub("fetch")
	ss.subs[sub] = nostr.Filters{f}
	defer delete(ss.subs, sub)
	if err := ss.c.Req(ctx, sub, f); err != nil {
		return err
	}
	for {
		m, err := ss.next(ctx, nil)
		if err != nil {
			return err
		}
		if m.Sub == sub && m.Label == "EOSE" {
			ss.fetched = true
			return ss.c.Send(ctx, "CLOSE", sub)
		}
	}
}

// listen takes in what the live subscriptions bring until the authors
// change.
func (ss *session) listen(ctx context.Context, changed <-chan struct{}) error {
	for {
		if _, err := ss.next(ctx, changed); err != nil {
			if errors.Is(err, errChanged) {
				return nil
			}
			return err
		}
	}
}

var errChanged = errors.New("the authors changed")

// next returns the relay's next message, taking in the EVENTs of our
// subscriptions as they come; it ends with ctx (its cause) or when changed
// closes.
func (ss *session) next(ctx context.Context, changed <-chan struct{}) (nostrclient.Message, error) {
	select {
	case m, ok := <-ss.c.Messages():
		if !ok {
			return m, ss.c.Err()
		}
		return m, ss.handle(ctx, m)
	case <-changed:
		return nostrclient.Message{}, errChanged
	case <-ctx.Done():
		return nostrclient.Message{}, context.Cause(ctx)
	}
}

// handle counts every message against the relay's budget, takes in an
// EVENT that one of our filters asked for (a relay may send anything:
// another author's list, another kind), and ends the connection when the
// relay closes one of our subscriptions.
func (ss *session) handle(ctx context.Context, m nostrclient.Message) error {
	filters, ours := ss.subs[m.Sub]
	switch {
	case !ss.r.budget.take(ss.f.cfg.Settings, ss.f.cfg.Now(), m.Size):
		return errOverBudget
	case !ours:
		return nil
	case m.Label == "CLOSED":
		return fmt.Errorf("the relay closed a subscription: %s", m.Text)
	case m.Label != "EVENT" || m.Event == nil || !filters.Match(m.Event):
		return nil
	}
	ok, reason := ss.f.cfg.Ingest(ctx, m.Event)
	if !ok && strings.HasPrefix(reason, "error:") {
		return errors.New(reason) // ours, not the event's: shutting down, the store failing
	}
	if !ok && !strings.HasPrefix(reason, "replaced:") {
		ss.f.cfg.Log.Debug("wot: contact list refused", "relay", ss.r.url, "id", m.Event.ID, "reason", reason)
	}
	return nil
}

func (ss *session) newSub(prefix string) string {
	ss.seq++
	return prefix + "-" + strconv.Itoa(ss.seq)
}

func isLive(sub string) bool { return strings.HasPrefix(sub, "live-") }
