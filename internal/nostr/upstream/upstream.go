// Package upstream keeps outpost's event store in step with other relays
// for the kinds its services read: NIP-87 mint reviews and announcements
// and the followed monitors' mint status events for the directory, and the
// kind-0 profiles of the faucet's users. Each upstream relay gets its own
// connection: a catch-up (NIP-77 negentropy where the relay speaks it, else
// REQ with since, paged), then a live subscription, redone every Resync and
// after every reconnect (with back-off). Every event goes through the
// relay's own checks (Ingest) and counts against a per-relay and a total
// budget.
//
// Upstream relays are named by the operator, not by users, so they are not
// dialled through netguard: a relay on a private address is the operator's
// choice (and what the tests use).
package upstream

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/events"
)

// NIP-87 kinds the directory reads.
const (
	kindReview       = 38000
	kindAnnouncement = 38172
)

// Settings are the upstream settings, bound by cmd/outpost to the flags
// their tags name and those flags' OUTPOST_* twins.
type Settings struct {
	Relays      []string `flag:"upstream-relays" usage:"relays (ws:// or wss://, comma-separated) whose mint reviews, mint announcements, followed monitors' (--monitors) mint status events and faucet users' profiles are kept in sync here"`
	Peers       []string `flag:"upstream-peers" usage:"the other nodes of this service (their relays, ws:// or wss://, comma-separated): every event they hold is kept in sync here, without budgets; each node lists the others"`
	RelayBudget int      `flag:"upstream-relay-budget" usage:"events taken in from one upstream relay per 24 h (bursts up to it); 0: no limit"`
	Budget      int      `flag:"upstream-budget" usage:"events taken in from all upstream relays together per 24 h; 0: no limit"`
}

// DefaultSettings: no upstream; budgets a community directory will not
// reach in a day but a hostile relay cannot turn into a full disk.
func DefaultSettings() Settings { return Settings{RelayBudget: 20_000, Budget: 100_000} }

// Valid checks the settings, naming a bad one.
func (s *Settings) Valid() error {
	var errs []error
	for i, r := range s.Relays {
		u, err := ValidRelayURL(r)
		if err != nil {
			errs = append(errs, settings.Errorf("upstream-relays", "%v", err))
		}
		s.Relays[i] = u
	}
	for i, r := range s.Peers {
		u, err := ValidRelayURL(r)
		if err != nil {
			errs = append(errs, settings.Errorf("upstream-peers", "%v", err))
		}
		s.Peers[i] = u
	}
	if s.RelayBudget < 0 {
		errs = append(errs, settings.Errorf("upstream-relay-budget", "must be 0 or more"))
	}
	if s.Budget < 0 {
		errs = append(errs, settings.Errorf("upstream-budget", "must be 0 or more"))
	}
	return errors.Join(errs...)
}

// ValidRelayURL checks a relay URL (ws:// or wss:// with a host) and returns
// it without a trailing slash.
func ValidRelayURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil {
		return s, errors.New(strconv.Quote(s) + " is not a ws:// or wss:// relay URL")
	}
	if u.Path == "/" {
		u.Path = ""
	}
	return u.String(), nil
}

// Ingester takes an event in through the relay's checks (relay.Ingest).
type Ingester func(ctx context.Context, ev *nostr.Event) (ok bool, reason string)

// Config configures a Syncer.
type Config struct {
	Settings
	Events *events.Store // what we hold (negentropy's local side, duplicates)
	Ingest Ingester
	// Authors lists the pubkeys whose kind-0 profiles are followed (the
	// faucet's users); nil: none.
	Authors func(ctx context.Context) []string
	// Follow are more filters to follow: the status events of the
	// monitors the directory follows.
	Follow []nostr.Filter
	Log    *slog.Logger
	Now    func() time.Time

	// REQOnly never tries NIP-77 (to compare the two, or for a relay known
	// to mishandle it).
	REQOnly     bool
	Resync      time.Duration // how often a connected relay is caught up again; default 10m
	MaxBackoff  time.Duration // longest wait between reconnects; default 1m
	DialTimeout time.Duration // default 10s
	Timeout     time.Duration // longest wait for one answer (EOSE, NEG-MSG); default 30s
}

// Syncer follows the upstream relays. Run it; Health reports on it.
type Syncer struct {
	cfg    Config
	relays []*relayState
	total  *ratelimit.Limiter // one key: all relays
	each   *ratelimit.Limiter // keyed by relay URL
	seen   refusedSet
	claims claims // ids being fetched after a reconciliation
}

// New returns a Syncer for cfg.Relays.
func New(cfg Config) *Syncer {
	cfg.Log = cmp.Or(cfg.Log, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Resync = cmp.Or(cfg.Resync, 10*time.Minute)
	cfg.MaxBackoff = cmp.Or(cfg.MaxBackoff, time.Minute)
	cfg.DialTimeout = cmp.Or(cfg.DialTimeout, 10*time.Second)
	cfg.Timeout = cmp.Or(cfg.Timeout, 30*time.Second)
	s := &Syncer{cfg: cfg, total: ratelimit.New(cfg.Budget, 24*time.Hour, cfg.Now),
		each: ratelimit.New(cfg.RelayBudget, 24*time.Hour, cfg.Now), seen: refusedSet{m: map[string]time.Time{}},
		claims: claims{m: map[string]chan struct{}{}}}
	seen := map[string]bool{}
	for i, u := range slices.Concat(cfg.Peers, cfg.Relays) { // a peer listed as a relay too is a peer
		if seen[u] {
			continue
		}
		seen[u] = true
		r := &relayState{url: u, peer: i < len(cfg.Peers), negentropy: negUnknown}
		if cfg.REQOnly {
			r.negentropy = negNo
		}
		s.relays = append(s.relays, r)
	}
	return s
}

// Run follows every relay until ctx ends.
func (s *Syncer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range s.relays {
		wg.Go(func() { s.follow(ctx, r) })
	}
	wg.Wait()
}

// follow keeps one relay connected, reconnecting with back-off after each
// failure; a session that caught up resets it.
func (s *Syncer) follow(ctx context.Context, r *relayState) {
	b := nostrclient.Backoff{Max: s.cfg.MaxBackoff, Now: s.cfg.Now}
	for ctx.Err() == nil {
		b.Start()
		caughtUp, err := s.session(ctx, r)
		if ctx.Err() != nil {
			return
		}
		r.failed(err, s.cfg.Now())
		s.cfg.Log.Info("upstream: disconnected", "relay", r.url, "err", err)
		if caughtUp {
			b.Reset()
		}
		wait := b.Next()
		if until := r.pausedUntil(); !until.IsZero() {
			wait = max(wait, until.Sub(s.cfg.Now()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// filters are what is followed from r, a new slice each time (the caller
// may change it). From a peer, another node of this service, everything
// (reviews, reports, announcements, status, notes), as strfry's sync does;
// from another relay reviews and announcements, Config.Follow, and the
// profiles of the faucet's users and the contact lists of Config.Lists (in
// chunks a relay will take).
func (s *Syncer) filters(ctx context.Context, r *relayState) []nostr.Filter {
	if r.peer {
		return []nostr.Filter{{}}
	}
	fs := []nostr.Filter{
		{Kinds: []int{kindAnnouncement}},
		{Kinds: []int{kindReview}, Tags: nostr.TagMap{"k": {strconv.Itoa(kindAnnouncement)}}},
	}
	for _, f := range s.cfg.Follow {
		fs = append(fs, f.Clone())
	}
	return append(fs, byAuthors(ctx, 0, s.cfg.Authors)...)
}

// errOverBudget ends a session whose relay (or all relays) used up its budget.
var errOverBudget = errors.New("event budget used up")

// take runs one event from r through the checks and into the store, unless
// it is held already, was refused lately, or the budget is spent.
func (s *Syncer) take(ctx context.Context, r *relayState, ev *nostr.Event) error {
	r.count(func(c *Counters) { c.Received++ })
	if s.seen.has(ev.ID, s.cfg.Now()) {
		r.count(func(c *Counters) { c.Duplicate++ }) // refused (and counted) before
		return nil
	}
	if s.cfg.Events != nil && s.held(ctx, ev.ID) {
		r.count(func(c *Counters) { c.Duplicate++ })
		return nil
	}
	if err := s.budget(r); err != nil {
		return err
	}
	ok, reason := s.cfg.Ingest(ctx, ev)
	switch {
	case ok && reason == "":
		r.count(func(c *Counters) { c.Stored++ })
	case ok:
		r.count(func(c *Counters) { c.Duplicate++ })
	case strings.HasPrefix(reason, "replaced:"):
		// An older version of an address than the one held: held in its
		// newer version, and not fetched again (from another peer, say).
		s.seen.add(ev.ID, s.cfg.Now())
		r.count(func(c *Counters) { c.Duplicate++ })
	case strings.HasPrefix(reason, "error:"):
		return errors.New(reason) // ours, not the event's: shutting down, the store failing
	default:
		s.seen.add(ev.ID, s.cfg.Now())
		r.count(func(c *Counters) { c.Skipped++ })
		s.cfg.Log.Debug("upstream: event refused", "relay", r.url, "id", ev.ID, "kind", ev.Kind, "reason", reason)
	}
	return nil
}

// budget counts an event against r's budget and the total; a peer's events
// count against neither: the node is ours, and must hold all it holds.
func (s *Syncer) budget(r *relayState) error {
	if r.peer {
		return nil
	}
	if ok, wait := s.each.Allow(r.url); !ok {
		r.overBudget(s.cfg.Now().Add(wait))
		return errOverBudget
	}
	if ok, wait := s.total.Allow(""); !ok {
		r.overBudget(s.cfg.Now().Add(wait))
		return errOverBudget
	}
	return nil
}

func (s *Syncer) held(ctx context.Context, id string) bool {
	found := false
	s.cfg.Events.Query(ctx, nostr.Filter{IDs: []string{id}}, nil, func(events.Meta, []byte) bool {
		found = true
		return false
	})
	return found
}

// HealthChecks are the upstream part of /health: each relay's state.
type HealthChecks struct {
	Relays []RelayHealth `json:"relays"`
}

// Health makes no outbound calls. It is degraded while a relay cannot be
// followed.
func (s *Syncer) Health(context.Context) outpost.Health[HealthChecks] {
	h := outpost.NewHealth(outpost.Version, HealthChecks{Relays: []RelayHealth{}})
	for _, r := range s.relays {
		rh := r.health()
		if !rh.Connected {
			h.Fail(outpost.HealthDegraded, rh.URL+" is not connected")
		}
		h.Checks.Relays = append(h.Checks.Relays, rh)
	}
	return h
}
