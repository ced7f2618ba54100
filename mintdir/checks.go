package mintdir

import (
	"context"
	"errors"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/probe"
)

// Check is one recorded check of a mint.
type Check struct {
	At         time.Time `json:"at"`
	OK         bool      `json:"ok"`
	Skipped    bool      `json:"skipped,omitempty"` // 429: not counted
	RTTMs      int       `json:"rtt_ms"`
	ErrKind    string    `json:"error,omitempty"`
	HTTPStatus int       `json:"http_status,omitempty"`
	Status     string    `json:"status"` // the mint's status after it
}

// Probe checks one mint (the prober calls it): GET /v1/info, the keysets
// when metadata is due, then records the check, its rollups, status,
// incidents and metadata in one transaction.
//
// A check that cannot be stored is not made: the store has said once that
// the disk is full, and checks resume when it is not. One that began while
// there was room and found writes stopped by the time it was done (the
// mint took its time answering) is dropped the same way, not returned as
// an error for the prober to log each round while the disk stays full.
func (d *Directory) Probe(ctx context.Context, id string) error {
	if !d.db.Writable() {
		return nil
	}
	err := d.probe(ctx, id)
	if errors.Is(err, kv.ErrStorageFull) {
		d.log.Debug("mintdir: check dropped: the disk filled while it ran", "mint_id", id)
		return nil
	}
	return err
}

func (d *Directory) probe(ctx context.Context, id string) error {
	m, err := d.Get(ctx, id)
	if err != nil {
		return err
	}
	if m.ID.String() != id {
		return nil // merged; the surviving record is probed on its own
	}
	if IsOnion(m.CanonicalURL) && d.cfg.ProbeProxy == "" {
		// Listed while there was a proxy: not checked, and not marked down
		// for it, until there is one again.
		if _, said := d.unproxied.LoadOrStore(id, true); !said {
			d.log.Warn("mintdir: an onion mint is not checked: set --probe-proxy to check it", "mint_id", id, "url", m.CanonicalURL)
		}
		return nil
	}
	res, info := d.fetchInfo(ctx, m)
	if !res.OK && ctx.Err() != nil {
		return ctx.Err() // we are shutting down: not the mint's fault
	}
	if info != nil && info.Pubkey != "" && info.Pubkey != m.PubKey {
		survivor, err := d.mergeIfKnown(m, info.Pubkey)
		if err != nil {
			return err
		}
		if !survivor.IsZero() {
			return d.refreshSummary(ctx, survivor, true) // more URLs: maybe more reviews
		}
	}
	keysets := d.fetchKeysets(ctx, m, info, res.At)
	c := &Check{At: res.At.UTC(), OK: res.OK, Skipped: res.Skipped, RTTMs: int(res.RTT.Milliseconds()),
		ErrKind: res.ErrKind, HTTPStatus: res.HTTPStatus}
	if !res.OK {
		c.RTTMs = 0
	}
	changed, err := d.record(m.ID, c, info, res.Body, keysets)
	if err != nil {
		return err
	}
	if d.cfg.OnCheck != nil {
		d.cfg.OnCheck(c.OK, c.Skipped, c.ErrKind)
	}
	if !res.OK {
		d.log.Debug("mintdir: check failed", "mint_id", id, "kind", res.ErrKind, "err", res.Err)
	}
	if !changed && !d.reviewsDue(m) {
		return nil
	}
	return d.refreshSummary(ctx, m.ID, changed)
}

// fetchInfo asks the mint for its NUT-06 info; info is nil unless the
// answer is valid info (invalid info fails the check).
func (d *Directory) fetchInfo(ctx context.Context, m *Mint) (probe.Result, *Info) {
	res := d.client.Info(ctx, m.CanonicalURL, d.now)
	if !res.OK {
		return res, nil
	}
	in, err := ParseInfo(res.Body)
	if err != nil {
		res.OK, res.ErrKind, res.Err, res.Body = false, probe.KindInvalidInfo, err.Error(), nil
		return res, nil
	}
	return res, &in
}

// fetchKeysets fetches the keysets when metadata is due: nil when not
// fetched, empty when that failed (the old keysets stay; tried again in an
// hour).
func (d *Directory) fetchKeysets(ctx context.Context, m *Mint, info *Info, at time.Time) []byte {
	if info == nil || (m.KeysetsFetchedAt != nil && at.Sub(*m.KeysetsFetchedAt) < keysetsEvery && info.Hash() == m.MetaHash) {
		return nil
	}
	keysets, err := d.client.Keysets(ctx, m.CanonicalURL)
	if err != nil {
		d.log.Debug("mintdir: keysets", "mint_id", m.ID, "err", err)
		return []byte{}
	}
	return keysets
}

// record stores a check and everything that follows from it; changed
// reports that the metadata changed with it.
func (d *Directory) record(id ID, c *Check, info *Info, body, keysets []byte) (changed bool, err error) {
	err = d.db.Update(func(txn *kv.Txn) error {
		m, err := getMint(txn, id)
		if err != nil || m == nil || !m.MergedInto.IsZero() {
			return err
		}
		hash := m.MetaHash
		if err := d.recordTxn(txn, m, c, info, body, keysets); err != nil {
			return err
		}
		changed = m.MetaHash != hash
		return nil
	})
	if err == nil {
		d.changed(id)
	}
	return changed, err
}

func (d *Directory) recordTxn(txn *kv.Txn, m *Mint, c *Check, info *Info, body, keysets []byte) error {
	id := m.ID
	var gap time.Duration // since the previous check (a 429 counts: the mint was up then)
	if m.LastCheckedAt != nil && !c.Skipped {
		gap = min(max(c.At.Sub(*m.LastCheckedAt), 0), 2*d.cfg.ProbeInterval)
	}
	disabled := false
	if info != nil {
		disabled = info.Features().MintingDisabled
	}
	d.apply(m, c, disabled)
	if err := d.settle(txn, m, c.At); err != nil {
		return err
	}
	c.Status = m.Status
	if err := kv.PutJSON(txn, timeKey(kCheck, id, c.At), c); err != nil {
		return err
	}
	for _, level := range []byte{level5m, level1h} {
		if err := addToRollup(txn, id, level, c, gap); err != nil {
			return err
		}
	}
	if info != nil {
		if err := d.updateMetadata(txn, m, info, body, keysets, c.At); err != nil {
			return err
		}
	}
	if err := txn.Set(scheduleKey(id), kv.U64(uint64(c.At.UnixMilli()))); err != nil {
		return err
	}
	// The summary (uptime, incidents, trust) commits with the check, so no
	// reader sees a check's status without what follows from it. Reviews
	// are read afterwards, when due (refreshSummary).
	if err := d.summarize(txn, m, m.Summary.Reviews); err != nil {
		return err
	}
	return kv.PutJSON(txn, mintKey(id), m)
}

func rollupKey(id ID, level byte, at time.Time) []byte {
	start := at.Truncate(levelSize[level]).Unix()
	return key(kRollup, id[:], []byte{level}, kv.U64(uint64(start)))
}

func addToRollup(txn *kv.Txn, id ID, level byte, c *Check, gap time.Duration) error {
	k := rollupKey(id, level, c.At)
	var r rollup
	item, err := txn.Get(k)
	switch {
	case errors.Is(err, kv.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := item.Value(r.decodeInto); err != nil {
			return err
		}
	}
	r.add(c, gap)
	return txn.Set(k, r.encode())
}

// apply moves this outpost's own observation of the mint (m.Own) with one
// check; settle then makes the mint's status of it and the other vantages:
//
//   - a success makes it online, or degraded when slower than SlowRTT or with
//     minting/melting disabled;
//   - a failure counts; the third in a row makes it offline (offline_since is
//     the first of them);
//   - offline for 30 days makes it abandoned;
//   - a 429 changes nothing.
func (d *Directory) apply(m *Mint, c *Check, disabled bool) {
	at := c.At
	m.LastCheckedAt = &at
	if c.Skipped {
		return
	}
	own := m.Own()
	defer func() { m.Self = &own }()
	m.ChecksTotal++
	if m.FirstCheckedAt == nil {
		m.FirstCheckedAt = &at
	}
	if c.OK {
		rtt := c.RTTMs
		m.LastSuccessAt, m.LastRTTMs, m.LastError = &at, &rtt, ""
		m.Failures, m.FailingSince = 0, nil
		own = Observation{Status: StatusOnline}
		if time.Duration(rtt)*time.Millisecond > d.cfg.SlowRTT || disabled {
			own.Status = StatusDegraded
		}
		return
	}
	m.LastFailureAt, m.LastRTTMs, m.LastError = &at, nil, c.ErrKind
	m.Failures++
	if m.FailingSince == nil {
		m.FailingSince = &at
	}
	if m.Failures >= offlineAfter && !down(own.Status) {
		since := *m.FailingSince
		own = Observation{Status: StatusOffline, OfflineSince: &since}
	}
	if own.Status == StatusOffline && own.OfflineSince != nil && at.Sub(*own.OfflineSince) >= abandonedAfter {
		own.Status = StatusAbandoned
	}
}

// --- raw checks ---

// Checks returns the raw checks of a mint in [from, to), newest first, at most limit.
func (d *Directory) Checks(ctx context.Context, m *Mint, from, to time.Time, limit int) ([]Check, error) {
	var out []Check
	id := m.ID
	err := d.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, perMintPrefix(kCheck, id), timeKey(kCheck, id, to.Add(-time.Millisecond)), true,
			func(_ []byte, c Check) (bool, error) {
				if c.At.Before(from) {
					return false, nil
				}
				out = append(out, c)
				return len(out) < limit, nil
			})
	})
	return out, err
}
