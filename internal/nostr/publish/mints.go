package publish

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/tick"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/mintdir"
)

// Catalogue is the part of the directory the mint publisher reads.
type Catalogue interface {
	Mints(ctx context.Context) ([]*mintdir.Mint, error)
	Get(ctx context.Context, id string) (*mintdir.Mint, error)
}

// Mints publishes a kind-38166 status event for every mint the directory
// has checked, replaced whenever its status (own or by consensus) changes
// and about every Refresh, and a kind-18166 monitor announcement saying how
// it checks. The directory calls Changed with each mint whose record it
// stores (mintdir.Config.OnChange), and that mint alone is read; the whole
// catalogue is read at the start and every Refresh, for mints no longer
// checked.
type Mints struct {
	Directory Catalogue
	Events    *events.Store
	Sink      Sink
	SecretKey string
	Interval  time.Duration // the prober's interval, announced
	Timeout   time.Duration // the prober's timeout, announced
	Refresh   time.Duration // default 1h
	Log       *slog.Logger
	Now       func() time.Time
	Tick      tick.Ticker // the refresh ticker; default a time.Ticker

	changes pending
}

// Changed tells the publisher that mint id's record changed; it never
// blocks, and changes of one mint made before Run reads them are one.
func (m *Mints) Changed(id string) { m.changes.add(id) }

// Run publishes until ctx ends.
func (m *Mints) Run(ctx context.Context) {
	now := clock(m.Now)
	log := cmp.Or(m.Log, slog.Default())
	sg, err := newSigner(m.SecretKey)
	if err != nil {
		log.Error("publish: mint status", "err", err)
		return
	}
	last, err := sg.published(ctx, m.Events, KindMintStatus)
	if err != nil {
		log.Error("publish: reading earlier mint status events", "err", err)
		return
	}
	monitors, err := sg.published(ctx, m.Events, KindMintMonitor)
	if err != nil {
		log.Error("publish: reading the earlier monitor announcement", "err", err)
		return
	}
	if tags := m.monitorTags(); monitors[""] == nil || !sameTags(monitors[""].Tags, tags) {
		content := "outpost's Cashu mint monitor: it asks every mint it knows for its NUT-06 info and publishes each mint's status as a kind-38166 event"
		if ev, err := sg.sign(KindMintMonitor, "", tags, content, nostr.Timestamp(now().Unix())); err == nil {
			m.sink(ctx, ev, log)
		}
	}
	refresh, stop := m.Tick.Start(cmp.Or(m.Refresh, time.Hour))
	defer stop()
	m.publishAll(ctx, sg, last, now(), log)
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.changes.wake():
			m.publishChanged(ctx, sg, last, now(), log)
		case <-refresh:
			m.changes.take() // the whole catalogue is read: the changes too
			m.publishAll(ctx, sg, last, now(), log)
		}
	}
}

// publishChanged publishes the mints the directory said changed.
func (m *Mints) publishChanged(ctx context.Context, sg *signer, last map[string]*nostr.Event, at time.Time, log *slog.Logger) {
	for _, id := range m.changes.take() {
		mint, err := m.Directory.Get(ctx, id)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, mintdir.ErrNotFound) {
				log.Error("publish: reading a mint", "mint_id", id, "err", err)
			}
			continue
		}
		m.publish(ctx, sg, last, mint, at, log)
	}
}

func (m *Mints) sink(ctx context.Context, ev *nostr.Event, log *slog.Logger) bool {
	if err := m.Sink(ctx, ev); err != nil {
		if ctx.Err() == nil {
			logFailure(log, "publish: mint event", err, "d", ev.Tags.GetD())
		}
		return false
	}
	return true
}

// publishAll publishes every mint of the catalogue that needs it.
func (m *Mints) publishAll(ctx context.Context, sg *signer, last map[string]*nostr.Event, at time.Time, log *slog.Logger) {
	mints, err := m.Directory.Mints(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Error("publish: listing mints", "err", err)
		}
		return
	}
	for _, mint := range mints {
		m.publish(ctx, sg, last, mint, at, log)
	}
}

// publish signs a status event for a checked mint whose status moved, or
// whose last one is older than Refresh.
func (m *Mints) publish(ctx context.Context, sg *signer, last map[string]*nostr.Event, mint *mintdir.Mint, at time.Time, log *slog.Logger) {
	if mint.LastCheckedAt == nil {
		return
	}
	refresh := nostr.Timestamp(cmp.Or(m.Refresh, time.Hour) / time.Second)
	tags := StatusTags(mint)
	prev := last[mint.CanonicalURL]
	if prev != nil && sameStatus(prev.Tags, tags) && nostr.Timestamp(at.Unix())-prev.CreatedAt < refresh {
		return
	}
	ev, err := sg.sign(KindMintStatus, mint.CanonicalURL, tags, "", nostr.Timestamp(at.Unix()))
	if err == nil && m.sink(ctx, ev, log) {
		last[mint.CanonicalURL] = ev
	}
}

// pending are the ids of mints changed since the publisher last looked.
type pending struct {
	mu  sync.Mutex
	ids map[string]bool
	w   chan struct{} // signalled when an id is added
}

func (p *pending) add(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[string]bool{}
	}
	p.ids[id] = true
	select {
	case p.wakeLocked() <- struct{}{}:
	default:
	}
}

func (p *pending) wake() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wakeLocked()
}

func (p *pending) wakeLocked() chan struct{} {
	if p.w == nil {
		p.w = make(chan struct{}, 1)
	}
	return p.w
}

// take returns the pending ids, in order, and forgets them.
func (p *pending) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := slices.Sorted(maps.Keys(p.ids))
	p.ids = nil
	return ids
}

// sameStatus: the tags that make a change worth pushing at once are equal.
func sameStatus(a, b nostr.Tags) bool {
	for _, name := range []string{"status", "consensus", "offline_since", "trust"} {
		x, y := a.Find(name), b.Find(name)
		if (x == nil) != (y == nil) || (x != nil && !sameTags(nostr.Tags{x}, nostr.Tags{y})) {
			return false
		}
	}
	return true
}

// StatusTags are a mint's status event's tags. Its status and
// offline_since are this outpost's own observation, so that monitors that
// follow each other never count each other's consensus; the consensus tag
// has the mint's status by consensus and how many vantages agreed, of how
// many voted.
func StatusTags(mint *mintdir.Mint) nostr.Tags {
	unix := func(t *time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	tags := nostr.Tags{{"d", mint.CanonicalURL}}
	for _, u := range mint.URLs {
		tags = append(tags, nostr.Tag{"u", u.URL})
	}
	own, agreed := mint.Own(), mint.Agreement()
	tags = append(tags, nostr.Tag{"status", own.Status},
		nostr.Tag{"consensus", mint.Status, strconv.Itoa(agreed.Agreeing), strconv.Itoa(agreed.Voting)})
	if mint.Name != "" {
		tags = append(tags, nostr.Tag{"name", mint.Name})
	}
	if mint.PubKey != "" {
		tags = append(tags, nostr.Tag{"mint_pubkey", mint.PubKey})
	}
	if mint.LastRTTMs != nil {
		tags = append(tags, nostr.Tag{"rtt", strconv.Itoa(*mint.LastRTTMs)})
	}
	s := mint.Summary
	for _, w := range []struct {
		name string
		pct  *float64
	}{{"24h", s.Uptime24h}, {"7d", s.Uptime7d}, {"30d", s.Uptime30d}} {
		if w.pct != nil {
			tags = append(tags, nostr.Tag{"uptime", w.name, strconv.FormatFloat(*w.pct, 'f', 2, 64)})
		}
	}
	if mint.LastCheckedAt != nil {
		tags = append(tags, nostr.Tag{"last_check", unix(mint.LastCheckedAt)})
	}
	if mint.LastSuccessAt != nil {
		tags = append(tags, nostr.Tag{"last_success", unix(mint.LastSuccessAt)})
	}
	if own.OfflineSince != nil {
		tags = append(tags, nostr.Tag{"offline_since", unix(own.OfflineSince)})
	}
	if mint.Features != nil {
		for _, n := range mint.Features.SupportedNuts {
			tags = append(tags, nostr.Tag{"N", strconv.Itoa(n)})
		}
	}
	tags = append(tags, nostr.Tag{"trust", strconv.Itoa(s.Trust.Score), s.Trust.Level})
	return append(tags, auditTags(s.Audits)...)
}

// auditTags are what this outpost's audits (--audit) found of the mint in
// 30 days, for other monitors to count: none while it has no audit of it.
func auditTags(a mintdir.AuditSummary) nostr.Tags {
	if a.Audits30d == 0 {
		return nil
	}
	unix := func(t *time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	tag := nostr.Tag{"audit", "30d", strconv.Itoa(a.Audits30d)}
	if a.SuccessRate30d != nil {
		tag = append(tag, strconv.FormatFloat(*a.SuccessRate30d, 'f', 2, 64))
	}
	tags := nostr.Tags{tag}
	if a.LastAuditAt != nil {
		tags = append(tags, nostr.Tag{"last_audit", unix(a.LastAuditAt)})
	}
	if a.LastAuditFailureAt != nil {
		tags = append(tags, nostr.Tag{"last_audit_failure", unix(a.LastAuditFailureAt)})
	}
	return tags
}

func (m *Mints) monitorTags() nostr.Tags {
	interval := cmp.Or(m.Interval, 5*time.Minute)
	timeout := cmp.Or(m.Timeout, 10*time.Second)
	return nostr.Tags{
		{"frequency", strconv.Itoa(int(interval / time.Second))},
		{"timeout", "info", strconv.Itoa(int(timeout / time.Millisecond))},
		{"c", "info"}, {"c", "keysets"},
		{"k", strconv.Itoa(KindMintStatus)},
	}
}
