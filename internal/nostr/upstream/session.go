package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/storage/events"
)

// A session is one connection to an upstream relay, through nostrclient
// rather than go-nostr's Relay, whose NIP-77 sync races with itself when a
// connection ends. go-nostr's negentropy package does the reconciliation
// itself.
type session struct {
	s    *Syncer
	r    *relayState
	c    *nostrclient.Conn
	subs map[string]nostr.Filters
	seq  int
	page pageStats // of the subscription being paged through
	live string    // the filters of the open live subscriptions, as JSON
}

type pageStats struct {
	sub    string
	events int
	oldest nostr.Timestamp
}

const (
	negFrameLimit = 60_000 // bytes of one NEG-MSG we send
	idsPerREQ     = 200    // ids fetched per REQ after a reconciliation
	pageLimit     = 500    // limit of one REQ page when catching up without NIP-77
	maxPages      = 2_000
	overlap       = 10 * time.Minute // REQ catch-up pages go back this far before the last catch-up
	skew          = time.Minute      // the live subscription's since goes back this far: clocks differ
	filtersPerREQ = 10
)

var (
	errTimeout      = errors.New("the relay did not answer in time")
	errNoNegentropy = errors.New("the relay does not speak NIP-77")
)

// session connects to r and follows it until the connection fails or ctx
// ends; caughtUp reports that at least one catch-up completed.
func (s *Syncer) session(ctx context.Context, r *relayState) (caughtUp bool, err error) {
	c, err := nostrclient.Dial(ctx, r.url, nostrclient.Options{DialTimeout: s.cfg.DialTimeout})
	if err != nil {
		return false, err
	}
	defer c.Close()
	ss := &session{s: s, r: r, c: c, subs: map[string]nostr.Filters{}}
	r.setConnected(true)
	s.cfg.Log.Info("upstream: connected", "relay", r.url)
	for {
		// The live subscription opens before the catch-up, so what it
		// takes in is held when the catch-up looks: nothing comes twice.
		start := s.cfg.Now()
		if err := ss.subscribe(ctx, start); err != nil {
			return caughtUp, err
		}
		if err := ss.catchUp(ctx); err != nil {
			return caughtUp, err
		}
		r.synced(start)
		caughtUp = true
		if err := ss.follow(ctx); err != nil {
			return caughtUp, err
		}
	}
}

func (ss *session) newSub(prefix string) string {
	ss.seq++
	return prefix + "-" + strconv.Itoa(ss.seq)
}

// next returns the relay's next message other than an EVENT, taking the
// EVENTs that come first in as they come. It gives up when the relay has
// sent nothing for idle (0: no such limit) or at until (zero: never).
func (ss *session) next(ctx context.Context, idle time.Duration, until time.Time) (nostrclient.Message, error) {
	wait := func() time.Duration {
		d := time.Until(until)
		if until.IsZero() || (idle > 0 && idle < d) {
			d = idle
		}
		return d
	}
	timer := time.NewTimer(wait())
	defer timer.Stop()
	for {
		select {
		case m, ok := <-ss.c.Messages():
			timer.Reset(wait())
			if !ok {
				return m, ss.c.Err()
			}
			if _, ours := ss.subs[m.Sub]; ours && m.Label == "CLOSED" && isLive(m.Sub) {
				return m, fmt.Errorf("the relay closed the live subscription: %s", m.Text)
			}
			if m.Label != "EVENT" {
				return m, nil
			}
			if err := ss.event(ctx, m.Sub, m.Event); err != nil {
				return m, err
			}
		case <-timer.C:
			return nostrclient.Message{}, errTimeout
		case <-ctx.Done():
			return nostrclient.Message{}, ctx.Err()
		}
	}
}

// event takes in an EVENT of one of our subscriptions; an event none of its
// filters asked for is skipped (a relay may send anything).
func (ss *session) event(ctx context.Context, sub string, ev *nostr.Event) error {
	filters, ok := ss.subs[sub]
	if !ok {
		return nil
	}
	if ev == nil || !filters.Match(ev) {
		ss.r.count(func(c *Counters) { c.Received++; c.Skipped++ })
		return nil
	}
	if sub == ss.page.sub {
		ss.page.events++
		if ss.page.oldest == 0 || ev.CreatedAt < ss.page.oldest {
			ss.page.oldest = ev.CreatedAt
		}
	}
	return ss.s.take(ctx, ss.r, ev)
}

// catchUp brings every filter up to date: by NIP-77 while the relay speaks
// it, else by REQ pages since the last catch-up.
func (ss *session) catchUp(ctx context.Context) error {
	for _, f := range ss.s.filters(ctx, ss.r) {
		if ss.r.negMode() != negNo {
			ids, err := ss.reconcile(ctx, f)
			switch {
			case errors.Is(err, errNoNegentropy):
				ss.s.cfg.Log.Info("upstream: no NIP-77; catching up with REQ", "relay", ss.r.url, "err", err)
				ss.r.setNeg(negNo)
			case err != nil:
				return err
			default:
				ss.r.setNeg(negYes)
				ss.s.cfg.Log.Debug("upstream: reconciled", "relay", ss.r.url, "need", len(ids))
				if err := ss.fetch(ctx, ids); err != nil {
					return err
				}
				continue
			}
		}
		if err := ss.pages(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// reconcile runs NIP-77 for f against what we hold and returns the ids the
// relay has and we lack (minus those refused lately).
func (ss *session) reconcile(ctx context.Context, f nostr.Filter) ([]string, error) {
	vec := vector.New()
	f.Limit, f.LimitZero = 0, false
	if ss.s.cfg.Events != nil {
		err := ss.s.cfg.Events.Query(ctx, f, nil, func(m events.Meta, _ []byte) bool {
			vec.Insert(m.CreatedAt, m.IDHex())
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	vec.Seal()
	neg := negentropy.New(vec, negFrameLimit)
	var need []string
	done := make(chan struct{})
	drained := make(chan struct{}, 2)
	drain := func(ch chan string, keep bool) {
		defer func() { drained <- struct{}{} }()
		for {
			select {
			case id, ok := <-ch:
				if !ok {
					return
				}
				if keep {
					need = append(need, id)
				}
			case <-done:
				return
			}
		}
	}
	go drain(neg.HaveNots, true)
	go drain(neg.Haves, false)
	complete, err := ss.negotiate(ctx, f, neg)
	if err != nil || !complete {
		close(done) // Reconcile stopped midway: its channels stay open
	} // else it closed them, and what they buffer is still read
	<-drained
	<-drained
	if err != nil || !complete {
		return nil, err
	}
	now := ss.s.cfg.Now()
	out := need[:0]
	for _, id := range need {
		if !ss.s.seen.has(id, now) {
			out = append(out, id)
		}
	}
	return out, nil
}

// negotiate exchanges NEG messages until the reconciliation is complete.
func (ss *session) negotiate(ctx context.Context, f nostr.Filter, neg *negentropy.Negentropy) (complete bool, err error) {
	sub := ss.newSub("neg")
	if err := ss.c.Send(ctx, "NEG-OPEN", sub, f, neg.Start()); err != nil {
		return false, err
	}
	answered := false
	for {
		m, err := ss.next(ctx, ss.s.cfg.Timeout, time.Time{})
		switch {
		case errors.Is(err, errTimeout) && !answered:
			return false, fmt.Errorf("%w: no answer to NEG-OPEN", errNoNegentropy)
		case err != nil:
			return false, err
		}
		switch {
		case m.Label == "NOTICE" && !answered:
			return false, fmt.Errorf("%w: %s", errNoNegentropy, m.Text)
		case m.Sub != sub:
			continue
		case m.Label == "NEG-ERR", m.Label == "NEG-ERROR", m.Label == "CLOSED":
			return false, fmt.Errorf("%w: %s", errNoNegentropy, m.Text)
		case m.Label != "NEG-MSG":
			continue
		}
		answered = true
		out, err := neg.Reconcile(m.Text)
		if err != nil {
			return false, fmt.Errorf("NIP-77: %w", err)
		}
		if out == "" {
			return true, ss.c.Send(ctx, "NEG-CLOSE", sub)
		}
		if err := ss.c.Send(ctx, "NEG-MSG", sub, out); err != nil {
			return false, err
		}
	}
}

// fetch asks for events by id, a batch per REQ, but not for those held by
// now (another session took them in) or refused since the reconciliation
// (an older version of an address), nor, from a peer, for those another
// peer's session is fetching: the peers' catch-ups run at once and each
// peer holds what the node missed, so each missed event is moved once,
// not once per peer. Those it left to another peer's session it waits
// for, then asks for any still missing (that session's peer went away,
// say). Only peers claim: they are ours, and a relay that is not could
// claim ids only to hold them back.
func (ss *session) fetch(ctx context.Context, ids []string) error {
	for len(ids) > 0 {
		var theirs []string
		for batch := range slices.Chunk(ids, idsPerREQ) {
			if ss.r.peer {
				var others []string
				batch, others = ss.s.claims.take(batch)
				theirs = append(theirs, others...)
			}
			err := ss.fetchMissing(ctx, batch)
			if ss.r.peer {
				ss.s.claims.give(batch)
			}
			if err != nil {
				return err
			}
		}
		if err := ss.s.claims.wait(ctx, theirs); err != nil {
			return err
		}
		ids = theirs
	}
	return nil
}

// fetchMissing fetches the ids of batch that are still missing. A peer
// looks them up once it claimed them: the session that took one in before
// had it claimed until it was held.
func (ss *session) fetchMissing(ctx context.Context, batch []string) error {
	now := ss.s.cfg.Now()
	missing := make([]string, 0, len(batch))
	for _, id := range batch {
		if !ss.s.seen.has(id, now) && (ss.s.cfg.Events == nil || !ss.s.held(ctx, id)) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err := ss.query(ctx, nostr.Filter{IDs: missing})
	return err
}

// pages catches f up with REQ since the last catch-up (less an overlap),
// newest first, a page at a time, until a page brings nothing older.
func (ss *session) pages(ctx context.Context, f nostr.Filter) error {
	if last := ss.r.since(); !last.IsZero() {
		since := nostr.Timestamp(last.Add(-overlap).Unix())
		f.Since = &since
	}
	f.Limit = pageLimit
	for range maxPages {
		st, err := ss.query(ctx, f)
		if err != nil {
			return err
		}
		if st.events == 0 || (f.Until != nil && st.oldest >= *f.Until) {
			return nil
		}
		until := st.oldest
		f.Until = &until
	}
	return nil
}

// query sends one REQ and takes its events in until EOSE.
func (ss *session) query(ctx context.Context, f nostr.Filter) (pageStats, error) {
	sub := ss.newSub("sync")
	ss.subs[sub] = nostr.Filters{f}
	ss.page = pageStats{sub: sub}
	defer func() {
		delete(ss.subs, sub)
		ss.page = pageStats{}
	}()
	if err := ss.c.Req(ctx, sub, f); err != nil {
		return pageStats{}, err
	}
	for {
		m, err := ss.next(ctx, ss.s.cfg.Timeout, time.Time{})
		if err != nil {
			return pageStats{}, err
		}
		if m.Sub != sub {
			continue
		}
		switch m.Label {
		case "EOSE":
			return ss.page, ss.c.Send(ctx, "CLOSE", sub)
		case "CLOSED":
			return pageStats{}, fmt.Errorf("the relay closed a subscription: %s", m.Text)
		}
	}
}

// subscribe opens the live subscriptions, unless they are open already for
// the same filters (the faucet's users may have changed). They ask for
// nothing stored (limit 0: the catch-up fetches that) and what is new since
// start less a clock skew margin; a relay that sends stored events anyway
// sends them before EOSE, which is awaited, so they are held when the
// catch-up looks.
func (ss *session) subscribe(ctx context.Context, start time.Time) error {
	filters := ss.s.filters(ctx, ss.r)
	key, _ := json.Marshal(filters)
	if string(key) == ss.live {
		return nil
	}
	for k := range ss.subs {
		if isLive(k) {
			ss.c.Send(ctx, "CLOSE", k)
			delete(ss.subs, k)
		}
	}
	since := nostr.Timestamp(start.Add(-skew).Unix())
	for i := range filters {
		filters[i].Since, filters[i].Limit, filters[i].LimitZero = &since, 0, true
	}
	waiting := map[string]bool{}
	for i := 0; i < len(filters); i += filtersPerREQ {
		chunk := filters[i:min(i+filtersPerREQ, len(filters))]
		sub := "live-" + strconv.Itoa(i/filtersPerREQ)
		ss.subs[sub] = chunk
		waiting[sub] = true
		if err := ss.c.Req(ctx, sub, chunk...); err != nil {
			return err
		}
	}
	for len(waiting) > 0 {
		m, err := ss.next(ctx, ss.s.cfg.Timeout, time.Time{})
		if err != nil {
			return err
		}
		if m.Label == "EOSE" {
			delete(waiting, m.Sub)
		}
	}
	ss.live = string(key)
	return nil
}

// follow takes in what the live subscriptions bring until the next resync.
func (ss *session) follow(ctx context.Context) error {
	resync := time.Now().Add(ss.s.cfg.Resync)
	_, err := ss.next(ctx, 0, resync)
	for err == nil { // a message other than an EVENT: none is for us
		_, err = ss.next(ctx, 0, resync)
	}
	if errors.Is(err, errTimeout) {
		return nil
	}
	return err
}

func isLive(sub string) bool { return strings.HasPrefix(sub, "live-") }
