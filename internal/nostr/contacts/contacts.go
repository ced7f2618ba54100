// Package contacts fetches the web of trust's contact lists (NIP-02, kind
// 3) from the relays the operator names for it (OUTPOST_WOT_RELAYS), hop
// by hop: it asks each relay for the lists of the keys the walk goes on
// through (the seeds, then the members short of the depth), 250 authors a
// filter, and follows them live; when a list it took in reaches new keys,
// the web of trust says so (Changed) and their lists are asked for next.
//
// A contact list is one replaceable event per author, so a relay is asked
// for each author's whole history once per connection (limit: one event an
// author); after a reconnect, the authors asked before are asked only for
// what came since the connection was lost, and new authors in full.
//
// The relays are others' and may be hostile: every request has a deadline
// no message stretches (a relay that trickles events does not keep it
// open), every event counts against the relay's budget of events and bytes
// a minute (a relay over it is left until the minute is over), an event no
// filter of ours asked for is dropped (a list by an author not asked for,
// another kind), and what is left goes through the relay's own checks
// (signature, ban list, write policy) before it is stored and applied.
package contacts

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// Settings are the contact-list fetch's operator settings.
type Settings struct {
	Relays      []string       `flag:"wot-relays" usage:"relays (ws:// or wss://, comma-separated) the web of trust's contact lists are fetched from, hop by hop, and followed live (default: --upstream-relays and --faucet-profile-relays)"`
	RelayEvents int            `flag:"wot-relay-events" usage:"messages (events and the rest) taken from one of --wot-relays per minute; a relay that sends more is hung up on until the minute is over"`
	RelayBytes  settings.Bytes `flag:"wot-relay-bytes" usage:"bytes of the messages taken from one of --wot-relays per minute; a relay that sends more is hung up on until the minute is over"`
}

// DefaultSettings: a first fetch of 10,000 lists (the most the walk asks
// for) from one relay takes a minute or two; a flooding relay costs at most
// that many signature checks and bytes a minute.
func DefaultSettings() Settings {
	return Settings{RelayEvents: 6_000, RelayBytes: 64 << 20}
}

// Valid checks the settings, naming a bad one.
func (s *Settings) Valid() error {
	var errs []error
	for i, r := range s.Relays {
		u, err := upstream.ValidRelayURL(r)
		if err != nil {
			errs = append(errs, settings.Errorf("wot-relays", "%v", err))
		}
		s.Relays[i] = u
	}
	if s.RelayEvents < 1 {
		errs = append(errs, settings.Errorf("wot-relay-events", "must be at least 1"))
	}
	if s.RelayBytes < 1<<20 {
		errs = append(errs, settings.Errorf("wot-relay-bytes", "must be at least 1MiB (one large contact list)"))
	}
	return errors.Join(errs...)
}

// Config configures a Fetcher.
type Config struct {
	Settings
	// Authors lists the keys (hex) whose contact lists are fetched.
	Authors func(ctx context.Context) []string
	// Ingest takes an event in through the relay's checks.
	Ingest upstream.Ingester
	Log    *slog.Logger
	Now    func() time.Time

	DialTimeout time.Duration // default 10s
	Timeout     time.Duration // longest wait for one request's end of stored events; default 30s
	MinBackoff  time.Duration // shortest wait between reconnects; default 1s
	MaxBackoff  time.Duration // longest wait between reconnects; default 1m
}

// Fetcher fetches and follows contact lists from every relay of
// Settings.Relays. Run it; call Changed when Authors changed.
type Fetcher struct {
	cfg     Config
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each Changed
}

// New returns a Fetcher; settings left zero take their defaults.
func New(cfg Config) *Fetcher {
	def := DefaultSettings()
	cfg.RelayEvents, cfg.RelayBytes = cmp.Or(cfg.RelayEvents, def.RelayEvents), cmp.Or(cfg.RelayBytes, def.RelayBytes)
	cfg.Log = cmp.Or(cfg.Log, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.DialTimeout = cmp.Or(cfg.DialTimeout, 10*time.Second)
	cfg.Timeout = cmp.Or(cfg.Timeout, 30*time.Second)
	cfg.MaxBackoff = cmp.Or(cfg.MaxBackoff, time.Minute)
	return &Fetcher{cfg: cfg, changed: make(chan struct{})}
}

// Changed tells every connected relay's session that Authors changed: it
// asks for the new authors' lists now. It never blocks.
func (f *Fetcher) Changed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Fetcher) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Run follows every relay until ctx ends.
func (f *Fetcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, u := range slices.Compact(slices.Sorted(slices.Values(f.cfg.Relays))) {
		wg.Go(func() { f.follow(ctx, &relay{url: u, fetched: map[string]bool{}, tooBig: map[string]bool{}}) })
	}
	wg.Wait()
}

// follow keeps one relay connected, reconnecting with back-off after each
// failure, and not before its budget allows.
func (f *Fetcher) follow(ctx context.Context, r *relay) {
	b := nostrclient.Backoff{Min: f.cfg.MinBackoff, Max: f.cfg.MaxBackoff, Now: f.cfg.Now}
	for ctx.Err() == nil {
		b.Start()
		progressed, err := f.session(ctx, r)
		if ctx.Err() != nil {
			return
		}
		f.cfg.Log.Info("wot: contact-list relay disconnected", "relay", r.url, "err", err)
		if progressed {
			b.Reset()
		}
		wait := max(b.Next(), r.budget.wait(f.cfg.Now())) // its budget is what ended a flood
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// relay is what is known of one relay across its connections.
type relay struct {
	url string
	// fetched are the authors whose lists were asked for, and lost the time
	// the live subscription that kept them up to date ended.
	fetched map[string]bool
	lost    time.Time
	budget  budget
	// suspects are the authors of the request a message too big to read
	// answered (it ends the connection, so the relay never says which
	// list it was): the next connection asks for them in halves, until
	// one author is left, who goes to tooBig.
	suspects []string
	// tooBig are the authors whose list is bigger than a message may be;
	// the relay is asked no more for them (the relay's checks would refuse
	// such a list anyway).
	tooBig map[string]bool
}

// budget counts one relay's events and bytes in the current minute.
type budget struct {
	start         time.Time
	events, bytes int64
	spent         bool
}

var errOverBudget = errors.New("the relay sent more than its budget of events or bytes a minute")

// take counts an event of size bytes; false when the minute's budget is
// spent.
func (b *budget) take(s Settings, now time.Time, size int) bool {
	if now.Sub(b.start) >= time.Minute {
		*b = budget{start: now}
	}
	b.events++
	b.bytes += int64(size)
	b.spent = b.events > int64(s.RelayEvents) || b.bytes > int64(s.RelayBytes)
	return !b.spent
}

// wait is how long until a spent budget is renewed.
func (b *budget) wait(now time.Time) time.Duration {
	if !b.spent {
		return 0
	}
	return max(0, b.start.Add(time.Minute).Sub(now))
}
