package mintdir

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Other monitors (Settings.Monitors) publish what they see of a mint as
// kind-38166 events, as outpost does (publish.Mints). Each followed
// monitor's latest fresh event for a mint the directory knows is one more
// vantage: the mint's status is what the majority of fresh vantages see.

// KindMintStatus is a monitor's status event for one mint; its d tag is the
// mint's canonical URL, its status tag what that monitor itself observed.
const KindMintStatus = 38166

// Bounds on what a followed monitor can make the directory do. A monitor
// is an operator's choice, but it is a counterpart all the same: a buggy
// or taken-over one must not add mints, outvote the future, or flood.
const (
	// VantageMaxAge is how long a followed monitor's event counts after its
	// created_at: outpost republishes every mint's status at least hourly,
	// so a monitor that is alive is never older than that; twice that
	// forgives it one missed republication.
	VantageMaxAge = 2 * time.Hour
	// vantageSkew is how far in the future an event's times may be before
	// the event is ignored (clocks differ a little, never by minutes).
	vantageSkew = 2 * time.Minute
	// maxRTTMs: a larger rtt tag is nonsense and left out.
	maxRTTMs = 10 * 60 * 1000
)

// Variables so that a test can lower them.
var (
	// maxVantagesPerMonitor caps the vantages kept per monitor: at most one
	// per known mint (newest wins), and never more than this.
	maxVantagesPerMonitor = 5000
	// vantageEventsPerHour bounds how many of one monitor's events are
	// processed: a republication of every mint, twice over, per hour.
	vantageEventsPerHour = 10_000
)

// Observation is what one vantage sees of a mint: its own checks' status,
// not anyone's consensus.
type Observation struct {
	Status       string     `json:"status"`
	OfflineSince *time.Time `json:"offline_since,omitempty"`
}

// Vantage is one monitor's observation of a mint, as the API lists it.
type Vantage struct {
	Monitor string `json:"monitor"` // hex pubkey; this outpost's own (Config.Self) for Self
	Self    bool   `json:"-"`
	Observation
	LastCheckedAt *time.Time `json:"last_checked_at,omitempty"`
	RTTMs         *int       `json:"rtt_ms,omitempty"`
	EventAt       time.Time  `json:"event_at"` // the event's created_at: how fresh it is
	// Audit is what the monitor's own audits found of the mint (its
	// ["audit", "30d", <n>, <rate>] tag), nil without.
	Audit *VantageAudit `json:"audit,omitempty"`
}

// VantageAudit is a monitor's audits of a mint in 30 days.
type VantageAudit struct {
	Audits30d      int      `json:"audits_30d"`
	SuccessRate30d *float64 `json:"audit_success_rate_30d"`
}

// parseAuditTag reads ["audit", "30d", <audits>, <success rate 0–1>];
// nil when it is not one.
func parseAuditTag(t nostr.Tag) *VantageAudit {
	if len(t) < 3 || t[1] != "30d" {
		return nil
	}
	n, err := strconv.Atoi(t[2])
	if err != nil || n < 1 || n > 1e6 {
		return nil
	}
	a := &VantageAudit{Audits30d: n}
	if len(t) > 3 {
		if r, err := strconv.ParseFloat(t[3], 64); err == nil && r >= 0 && r <= 1 {
			a.SuccessRate30d = &r
		}
	}
	return a
}

// Consensus is how many voting vantages (those that know a status) agreed
// with the mint's status.
type Consensus struct {
	Agreeing int `json:"agreeing"`
	Voting   int `json:"voting"`
}

// Own is what this outpost's own checks see of m.
func (m *Mint) Own() Observation {
	if m.Self != nil {
		return *m.Self
	}
	// A record from before monitors were followed: its status was its own.
	return Observation{Status: m.Status, OfflineSince: m.OfflineSince}
}

// Agreement is how many vantages agreed with m's status, of how many voted.
func (m *Mint) Agreement() Consensus {
	if m.Consensus == nil {
		if m.Status == StatusUnknown {
			return Consensus{}
		}
		return Consensus{Agreeing: 1, Voting: 1}
	}
	return *m.Consensus
}

func down(status string) bool { return status == StatusOffline || status == StatusAbandoned }
func up(status string) bool   { return status == StatusOnline || status == StatusDegraded }

// consensus is the mint's status from its vantages' observations:
//
//   - a vantage with no status yet (unknown) does not vote;
//   - offline when a strict majority of the votes are offline (or
//     abandoned), since the time by which a majority saw it offline; then
//     abandoned once that is 30 days ago;
//   - otherwise degraded when a strict majority of the up votes are
//     degraded, else online;
//   - unknown when nobody votes.
//
// With one vantage (this outpost alone) it is that vantage's status.
func consensus(votes []Observation, at time.Time) (Observation, Consensus) {
	var offline []time.Time
	ups, degraded := 0, 0
	for _, v := range votes {
		switch {
		case down(v.Status):
			since := at
			if v.OfflineSince != nil {
				since = *v.OfflineSince
			}
			offline = append(offline, since)
		case up(v.Status):
			ups++
			if v.Status == StatusDegraded {
				degraded++
			}
		}
	}
	n := len(offline) + ups
	switch {
	case n == 0:
		return Observation{Status: StatusUnknown}, Consensus{}
	case 2*len(offline) > n:
		sort.Slice(offline, func(i, j int) bool { return offline[i].Before(offline[j]) })
		since := offline[n/2] // the (majority)th to see it offline
		o := Observation{Status: StatusOffline, OfflineSince: &since}
		if at.Sub(since) >= abandonedAfter {
			o.Status = StatusAbandoned
		}
		return o, Consensus{Agreeing: len(offline), Voting: n}
	case 2*degraded > ups:
		return Observation{Status: StatusDegraded}, Consensus{Agreeing: degraded, Voting: n}
	}
	return Observation{Status: StatusOnline}, Consensus{Agreeing: ups - degraded, Voting: n}
}

// --- the followed monitors' events ---

var errStatusEvent = errors.New("not a mint status event")

// parseStatusEvent reads a kind-38166 event as a vantage on the mint its d
// tag names (normalised), or fails. Times beyond now plus a small skew
// fail it; a malformed optional tag (rtt, last_check, offline_since) is
// left out.
func parseStatusEvent(ev *nostr.Event, now time.Time) (mintURL string, v Vantage, err error) {
	if ev.Kind != KindMintStatus {
		return "", v, errStatusEvent
	}
	limit := now.Add(vantageSkew)
	v.EventAt = time.Unix(int64(ev.CreatedAt), 0).UTC()
	if v.EventAt.After(limit) {
		return "", v, errors.New("created_at is in the future")
	}
	u, err := catalogueURL(ev.Tags.GetD())
	if err != nil {
		return "", v, err
	}
	statuses := 0
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "status":
			statuses++
			v.Status = t[1]
		case "rtt":
			if ms, err := strconv.Atoi(t[1]); err == nil && ms >= 0 && ms <= maxRTTMs {
				v.RTTMs = &ms
			}
		case "last_check":
			v.LastCheckedAt = unixTag(t[1], limit)
		case "offline_since":
			v.OfflineSince = unixTag(t[1], limit)
		case "audit":
			v.Audit = parseAuditTag(t)
		}
	}
	if statuses != 1 || !slices.Contains(Statuses, v.Status) {
		return "", v, errors.New("the event needs one status tag with a known status")
	}
	if !down(v.Status) {
		v.OfflineSince = nil
	}
	v.Monitor = ev.PubKey
	return u, v, nil
}

// unixTag is a tag's unix time, nil unless it is one no later than limit.
func unixTag(s string, limit time.Time) *time.Time {
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec < 0 || sec > limit.Unix() {
		return nil
	}
	t := time.Unix(sec, 0).UTC()
	return &t
}

// follows: pk is a followed monitor other than this outpost itself (whose
// own events are in its store too).
func (d *Directory) follows(pk string) bool {
	return pk != d.cfg.Self && slices.Contains(d.cfg.Monitors, pk)
}

// takeStatusEvent queues a followed monitor's status event, unless it is
// malformed, from the future, or over the monitor's rate: checked here, so
// a flood never fills the work queue.
func (d *Directory) takeStatusEvent(ev *nostr.Event) {
	u, v, err := parseStatusEvent(ev, d.now())
	if err != nil {
		d.log.Debug("mintdir: a monitor's status event ignored", "event", ev.ID, "monitor", ev.PubKey, "err", err)
		return
	}
	if ok, _ := d.monitorEvents.Allow(ev.PubKey); !ok {
		d.log.Debug("mintdir: a monitor over its rate; status event ignored", "event", ev.ID, "monitor", ev.PubKey)
		return
	}
	d.enqueue(func(ctx context.Context) {
		switch err := d.addVantage(u, v); {
		case errors.Is(err, errTooManyVantages):
			d.log.Debug("mintdir: a monitor's status event ignored", "monitor", v.Monitor, "url", u, "err", err)
		case err != nil:
			d.log.Log(ctx, kv.FailureLevel(err), "mintdir: a monitor's status", "monitor", v.Monitor, "url", u, "err", err)
		}
	})
}

var errTooManyVantages = errors.New("the monitor has the most vantages kept")

// addVantage keeps v for the mint known by u (a mint the directory does not
// know is ignored: a monitor adds none) when it is newer than the one kept,
// and settles the mint's status.
func (d *Directory) addVantage(u string, v Vantage) error {
	pk, err := hex.DecodeString(v.Monitor)
	if err != nil || len(pk) != 32 {
		return errors.New("a monitor's key is not hex")
	}
	now := d.now()
	if now.Sub(v.EventAt) >= VantageMaxAge {
		return nil
	}
	var stored ID // the mint whose record the vantage changed
	err = d.db.Update(func(txn *kv.Txn) error {
		stored = ID{}
		id, ok, err := lookupID(txn, urlKey(u))
		if err != nil || !ok {
			return err
		}
		m, err := resolve(txn, id)
		if err != nil || m == nil {
			return err
		}
		k := vantageKey(pk, m.ID)
		var old Vantage
		found, err := kv.GetJSON(txn, k, &old)
		switch {
		case err != nil:
			return err
		case found && !v.EventAt.After(old.EventAt):
			return nil // newest wins
		case !found:
			if n, err := countKeys(txn, key(kVantage, pk), maxVantagesPerMonitor); err != nil {
				return err
			} else if n >= maxVantagesPerMonitor {
				return errTooManyVantages
			}
		}
		if err := kv.PutJSON(txn, k, v); err != nil {
			return err
		}
		stored = m.ID
		return d.settleAndStore(txn, m, now)
	})
	if err == nil && !stored.IsZero() {
		d.changed(stored)
	}
	return err
}

// settleAndStore settles m's status and stores it, with a fresh summary
// when the status moved (trust depends on it).
func (d *Directory) settleAndStore(txn *kv.Txn, m *Mint, at time.Time) error {
	before := m.Status
	if err := d.settle(txn, m, at); err != nil {
		return err
	}
	if m.Status != before {
		if err := d.summarize(txn, m, m.Summary.Reviews); err != nil {
			return err
		}
	}
	return kv.PutJSON(txn, mintKey(m.ID), m)
}

// countKeys counts keys under prefix, up to limit.
func countKeys(txn *kv.Txn, prefix []byte, limit int) (int, error) {
	n := 0
	err := kv.EachKey(txn, prefix, func([]byte) (bool, error) { n++; return n < limit, nil })
	return n, err
}

// vantages reads the fresh vantages of the followed monitors on m (stale
// ones are deleted when txn may write).
func (d *Directory) vantages(txn *kv.Txn, id ID, at time.Time, prune bool) ([]Vantage, error) {
	var out []Vantage
	for _, mon := range d.cfg.Monitors {
		pk, err := hex.DecodeString(mon)
		if err != nil || mon == d.cfg.Self {
			continue
		}
		k := vantageKey(pk, id)
		var v Vantage
		found, err := kv.GetJSON(txn, k, &v)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if at.Sub(v.EventAt) >= VantageMaxAge {
			if prune {
				if err := txn.Delete(k); err != nil {
					return nil, err
				}
			}
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// settle sets m's status from this outpost's own observation and the fresh
// vantages of the monitors it follows (see consensus), and moves incidents
// with it: one opens when the mint, up before, is offline by consensus (it
// started when a majority saw it offline) and closes when it is up again.
// An incident records every vantage that saw the mint offline while it was
// open.
func (d *Directory) settle(txn *kv.Txn, m *Mint, at time.Time) error {
	others, err := d.vantages(txn, m.ID, at, true)
	if err != nil {
		return err
	}
	own := m.Own()
	m.Self = &own
	votes := []Observation{own}
	offline := []string{}
	if down(own.Status) && d.cfg.Self != "" {
		offline = append(offline, d.cfg.Self)
	}
	for _, v := range others {
		votes = append(votes, v.Observation)
		if down(v.Status) {
			offline = append(offline, v.Monitor)
		}
	}
	c, agreed := consensus(votes, at)
	wasUp := up(m.Status)
	m.Status, m.OfflineSince, m.Consensus = c.Status, c.OfflineSince, &agreed
	switch {
	case down(c.Status) && m.OpenIncident == nil && wasUp:
		start := *c.OfflineSince
		m.OpenIncident = &start
		return kv.PutJSON(txn, timeKey(kIncident, m.ID, start), &Incident{StartedAt: start, SeenBy: offline})
	case down(c.Status) && m.OpenIncident != nil:
		return seenBy(txn, m.ID, *m.OpenIncident, offline)
	case up(c.Status) && m.OpenIncident != nil:
		start := *m.OpenIncident
		m.OpenIncident = nil
		var inc Incident
		if _, err := kv.GetJSON(txn, timeKey(kIncident, m.ID, start), &inc); err != nil {
			return err
		}
		inc.StartedAt, inc.ResolvedAt, inc.Severity = start, &at, severity(at.Sub(start))
		return kv.PutJSON(txn, timeKey(kIncident, m.ID, start), &inc)
	}
	return nil
}

// seenBy adds monitors to the open incident's record, when any is new.
func seenBy(txn *kv.Txn, id ID, start time.Time, monitors []string) error {
	var inc Incident
	if _, err := kv.GetJSON(txn, timeKey(kIncident, id, start), &inc); err != nil {
		return err
	}
	n := len(inc.SeenBy)
	for _, mon := range monitors {
		if !slices.Contains(inc.SeenBy, mon) {
			inc.SeenBy = append(inc.SeenBy, mon)
		}
	}
	if len(inc.SeenBy) == n {
		return nil
	}
	inc.StartedAt = start
	return kv.PutJSON(txn, timeKey(kIncident, id, start), &inc)
}

// Vantages lists every fresh vantage on m: this outpost's own first (with
// its last check), then each followed monitor's, in the order they are
// followed.
func (d *Directory) Vantages(ctx context.Context, m *Mint) ([]Vantage, error) {
	own := Vantage{Monitor: d.cfg.Self, Self: true, Observation: m.Own(), LastCheckedAt: m.LastCheckedAt}
	if m.LastCheckedAt != nil {
		own.EventAt = *m.LastCheckedAt
	}
	if m.LastSuccessAt != nil && m.LastCheckedAt != nil && m.LastSuccessAt.Equal(*m.LastCheckedAt) {
		own.RTTMs = m.LastRTTMs
	}
	out := []Vantage{own}
	err := d.db.View(func(txn *kv.Txn) error {
		others, err := d.vantages(txn, m.ID, d.now(), false)
		out = append(out, others...)
		return err
	})
	return out, err
}

// loadVantages takes the followed monitors' fresh status events already in
// the store (published here, or synced, before they were followed).
func (d *Directory) loadVantages(ctx context.Context) {
	if len(d.cfg.Monitors) == 0 || d.events == nil {
		return
	}
	since := nostr.Timestamp(d.now().Add(-VantageMaxAge).Unix())
	f := nostr.Filter{Kinds: []int{KindMintStatus}, Authors: d.cfg.Monitors, Since: &since, Limit: maxVantagesPerMonitor}
	for ev, err := range d.events.Find(ctx, f) {
		if err != nil {
			d.log.Error("mintdir: reading the followed monitors' status events", "err", err)
			return
		}
		if !d.follows(ev.PubKey) {
			continue
		}
		u, v, err := parseStatusEvent(ev, d.now())
		if err == nil {
			err = d.addVantage(u, v)
		}
		if err != nil && ctx.Err() == nil {
			d.log.Debug("mintdir: a stored status event of a followed monitor", "event", ev.ID, "err", err)
		}
	}
}

// pruneVantages deletes vantages that are stale or of monitors no longer
// followed.
func (d *Directory) pruneVantages(ctx context.Context) error {
	now := d.now()
	var keys [][]byte
	err := d.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, key(kVantage), nil, false, func(k []byte, v Vantage) (bool, error) {
			if now.Sub(v.EventAt) >= VantageMaxAge || !d.follows(v.Monitor) {
				keys = append(keys, k)
			}
			return len(keys) < 10_000 && ctx.Err() == nil, ctx.Err()
		})
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	for chunk := range slices.Chunk(keys, 1000) {
		if err := d.deleteKeys(chunk); err != nil {
			return err
		}
	}
	return nil
}
