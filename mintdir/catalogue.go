package mintdir

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/netguard"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/probe"
)

// Statuses of a mint.
const (
	StatusUnknown   = "unknown"   // not checked successfully yet
	StatusOnline    = "online"    // the last check succeeded
	StatusDegraded  = "degraded"  // reachable, but slow or with minting/melting disabled
	StatusOffline   = "offline"   // 3 consecutive failed checks
	StatusAbandoned = "abandoned" // offline for 30 days
)

// Statuses lists every status, in order of health.
var Statuses = []string{StatusOnline, StatusDegraded, StatusUnknown, StatusOffline, StatusAbandoned}

// Mint is the catalogue record of one mint, with its probe state and the
// summary figures refreshed after every check.
type Mint struct {
	ID           ID        `json:"id"`
	MergedInto   ID        `json:"merged_into,omitzero"` // set when this record turned out to be another mint
	CanonicalURL string    `json:"canonical_url"`
	URLs         []MintURL `json:"urls"` // canonical first
	CreatedAt    time.Time `json:"created_at"`
	Source       string    `json:"source"` // "submit", "announcement" or "own" (Config.Own)
	AnnouncedBy  []string  `json:"announced_by,omitempty"`

	PubKey          string     `json:"pubkey,omitempty"`
	PubKeyChangedAt *time.Time `json:"pubkey_changed_at,omitempty"`
	Name            string     `json:"name,omitempty"`
	IconURL         string     `json:"icon_url,omitempty"`
	Features        *Features  `json:"features,omitempty"`  // nil until the first successful check
	Operators       []string   `json:"operators,omitempty"` // hex pubkeys of nostr contacts: their reviews don't count

	Status         string       `json:"status"` // by consensus of the vantages (see consensus)
	OfflineSince   *time.Time   `json:"offline_since,omitempty"`
	Consensus      *Consensus   `json:"consensus,omitempty"` // nil in records from before monitors were followed
	Self           *Observation `json:"self,omitempty"`      // what this outpost's own checks see; see Own
	FirstCheckedAt *time.Time   `json:"first_checked_at,omitempty"`
	LastCheckedAt  *time.Time   `json:"last_checked_at,omitempty"`
	LastSuccessAt  *time.Time   `json:"last_success_at,omitempty"`
	LastFailureAt  *time.Time   `json:"last_failure_at,omitempty"`
	LastRTTMs      *int         `json:"last_rtt_ms,omitempty"` // of the last check, when it succeeded
	LastError      string       `json:"last_error,omitempty"`
	Failures       int          `json:"failures,omitempty"` // consecutive failed checks
	FailingSince   *time.Time   `json:"failing_since,omitempty"`
	ChecksTotal    int64        `json:"checks_total"`
	OpenIncident   *time.Time   `json:"open_incident,omitempty"` // its start

	MetaHash         string     `json:"meta_hash,omitempty"`
	MetaFetchedAt    *time.Time `json:"meta_fetched_at,omitempty"`
	KeysetsFetchedAt *time.Time `json:"keysets_fetched_at,omitempty"`
	ServerTime       *time.Time `json:"server_time,omitempty"`

	Summary       Summary    `json:"summary"`
	ReviewsReadAt *time.Time `json:"reviews_read_at,omitempty"` // when Summary.Reviews was read from the event store
}

// MintURL is one URL a mint is known by.
type MintURL struct {
	URL        string `json:"url"`
	Advertised bool   `json:"advertised,omitempty"` // in the mint's current NUT-06 urls
}

// URLType is clearnet, tor or mirror.
func (m *Mint) URLType(u string) string { return urlType(u, m.CanonicalURL) }

// URLActive: the mint advertises the URL now, or it is the canonical URL of
// a mint that is not offline.
func (m *Mint) URLActive(u MintURL) bool {
	if u.Advertised {
		return true
	}
	return u.URL == m.CanonicalURL && m.Status != StatusOffline && m.Status != StatusAbandoned
}

// URLList is every URL, canonical first.
func (m *Mint) URLList() []string {
	out := make([]string, len(m.URLs))
	for i, u := range m.URLs {
		out[i] = u.URL
	}
	return out
}

func (m *Mint) hasURL(u string) bool {
	return slices.ContainsFunc(m.URLs, func(x MintURL) bool { return x.URL == u })
}

// ErrNotFound is the error for an unknown mint id or URL.
var ErrNotFound = outpost.Errorf(outpost.NotFound, "mint_not_found", "no mint with that id or URL is known")

// --- lookups ---

func getMint(txn *kv.Txn, id ID) (*Mint, error) {
	var m Mint
	found, err := kv.GetJSON(txn, mintKey(id), &m)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, nil
	}
	return &m, nil
}

// resolve follows merges to the surviving record.
func resolve(txn *kv.Txn, id ID) (*Mint, error) {
	for range 8 {
		m, err := getMint(txn, id)
		if err != nil || m == nil || m.MergedInto.IsZero() {
			return m, err
		}
		id = m.MergedInto
	}
	return nil, errors.New("mintdir: merge chain too long")
}

func lookupID(txn *kv.Txn, k []byte) (ID, bool, error) {
	var id ID
	item, err := txn.Get(k)
	if errors.Is(err, kv.ErrNotFound) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	err = item.Value(func(b []byte) error { copy(id[:], b); return nil })
	return id, err == nil, err
}

// Get returns the mint with the given id (a merged id answers with the mint
// it became), or ErrNotFound.
func (d *Directory) Get(ctx context.Context, id string) (*Mint, error) {
	mid, err := ParseID(strings.ToLower(id))
	if err != nil {
		return nil, ErrNotFound
	}
	var m *Mint
	err = d.db.View(func(txn *kv.Txn) error {
		m, err = resolve(txn, mid)
		return err
	})
	if err == nil && m == nil {
		err = ErrNotFound
	}
	return m, err
}

// GetByURL returns the mint known by raw (normalised first), or ErrNotFound.
func (d *Directory) GetByURL(ctx context.Context, raw string) (*Mint, error) {
	u, err := catalogueURL(raw)
	if err != nil {
		return nil, ErrNotFound
	}
	var m *Mint
	err = d.db.View(func(txn *kv.Txn) error {
		id, ok, err := lookupID(txn, urlKey(u))
		if err != nil || !ok {
			return err
		}
		m, err = resolve(txn, id)
		return err
	})
	if err == nil && m == nil {
		err = ErrNotFound
	}
	return m, err
}

// --- adding mints ---

// SubmitResult is the outcome of a submission.
type SubmitResult struct {
	ID     ID
	Exists bool // the normalised URL was known already
}

// Submit adds a mint by URL, or finds the one already known by it. The URL
// must be http(s) and its host must resolve to public addresses (unless
// private ones are allowed). A new mint is probed at once.
func (d *Directory) Submit(ctx context.Context, raw string) (SubmitResult, error) {
	u, err := d.checkURL(ctx, raw)
	if err != nil {
		return SubmitResult{}, err
	}
	return d.add(u, "submit", "")
}

// listOwn adds the mints this outpost runs itself, once: a mint already
// known keeps its record.
func (d *Directory) listOwn() {
	for _, raw := range d.cfg.Own {
		u, err := catalogueURL(raw)
		if err == nil {
			_, err = d.add(u, "own", "")
		}
		if err != nil {
			d.log.Warn("mintdir: listing this outpost's own mint", "url", raw, "err", err)
		}
	}
}

// checkURL normalises a submitted URL and applies the SSRF guard (which
// lets this outpost's own mints through).
func (d *Directory) checkURL(ctx context.Context, raw string) (string, error) {
	u, err := catalogueURL(raw)
	if err != nil {
		return "", outpost.Errorf(outpost.Invalid, "invalid_mint_url", "mint_url: %v", err).With("field", "mint_url")
	}
	p, err := url.Parse(u)
	if err != nil { // never: minturl's spellings parse back
		return "", outpost.Errorf(outpost.Invalid, "invalid_mint_url", "mint_url: the URL does not parse").With("field", "mint_url")
	}
	if IsOnion(u) {
		return u, d.checkOnion(p.Hostname())
	}
	if d.own(u) {
		return u, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := netguard.CheckHost(ctx, d.cfg.Resolver, p.Hostname(), d.cfg.AllowPrivate); err != nil {
		msg := "mint_url: the host does not resolve"
		if errors.Is(err, netguard.ErrBlocked) {
			msg = "mint_url: the host is a private, loopback or link-local address"
		}
		return "", outpost.Errorf(outpost.Invalid, "invalid_mint_url", "%s", msg).With("field", "mint_url")
	}
	return u, nil
}

// checkOnion admits an onion mint only when there is a proxy to check it
// through, and only by a well-formed onion service name.
func (d *Directory) checkOnion(host string) error {
	if d.cfg.ProbeProxy == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_mint_url", "mint_url: .onion mints are checked only through a proxy, and this directory has none; submit a clearnet URL (its NUT-06 urls list the others)").With("field", "mint_url")
	}
	if netguard.CheckOnion(host) != nil {
		return outpost.Errorf(outpost.Invalid, "invalid_mint_url", "mint_url: not a valid onion service name").With("field", "mint_url")
	}
	return nil
}

// own reports whether the normalised URL u is one of this outpost's own mints.
func (d *Directory) own(u string) bool {
	for _, raw := range d.cfg.Own {
		if o, err := catalogueURL(raw); err == nil && o == u {
			return true
		}
	}
	return false
}

// add creates a mint for the normalised URL u unless one is known by it.
func (d *Directory) add(u, source, announcer string) (SubmitResult, error) {
	var res SubmitResult
	now := d.now().UTC()
	err := d.db.Update(func(txn *kv.Txn) error {
		res = SubmitResult{}
		id, ok, err := lookupID(txn, urlKey(u))
		if err != nil {
			return err
		}
		if ok {
			m, err := resolve(txn, id)
			if err != nil || m == nil {
				return err
			}
			res = SubmitResult{ID: m.ID, Exists: true}
			if announcer != "" && !slices.Contains(m.AnnouncedBy, announcer) {
				m.AnnouncedBy = append(m.AnnouncedBy, announcer)
				return kv.PutJSON(txn, mintKey(m.ID), m)
			}
			return nil
		}
		nid := NewID()
		m := &Mint{ID: nid, CanonicalURL: u, URLs: []MintURL{{URL: u}}, CreatedAt: now, Source: source,
			Status: StatusUnknown}
		if announcer != "" {
			m.AnnouncedBy = []string{announcer}
		}
		m.Summary = Summary{ComputedAt: now}
		m.Summary.Trust = scoreTrust(m, nil, &m.Summary, d.cfg.SlowRTT, now)
		if err := txn.Set(urlKey(u), nid[:]); err != nil {
			return err
		}
		if err := txn.Set(scheduleKey(nid), kv.U64(0)); err != nil {
			return err
		}
		res.ID = m.ID
		return kv.PutJSON(txn, mintKey(nid), m)
	})
	if err == nil && !res.Exists {
		d.prober.Trigger(res.ID.String())
		d.log.Info("mintdir: new mint", "mint_id", res.ID, "url", u, "source", source)
	}
	return res, err
}

// targets lists every mint for the prober, with its last check.
func (d *Directory) targets(ctx context.Context) ([]probe.Target, error) {
	var out []probe.Target
	err := d.db.View(func(txn *kv.Txn) error {
		prefix := key(kSchedule)
		it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix, Values: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var id ID
			copy(id[:], it.Item().Key()[len(prefix):])
			t := probe.Target{ID: id.String()}
			it.Item().Value(func(b []byte) error {
				if ms := u64(b); ms > 0 {
					t.LastChecked = time.UnixMilli(int64(ms))
				}
				return nil
			})
			out = append(out, t)
		}
		return ctx.Err()
	})
	return out, err
}

// Count is the number of mints in the catalogue (merged records excluded).
func (d *Directory) Count() (int, error) {
	n := 0
	err := d.db.View(func(txn *kv.Txn) error {
		return kv.EachKey(txn, key(kSchedule), func([]byte) (bool, error) { n++; return true, nil })
	})
	return n, err
}

// each calls fn with every mint (merged records skipped).
func (d *Directory) each(ctx context.Context, fn func(m *Mint)) error {
	return d.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, key(kMint), nil, false, func(_ []byte, m Mint) (bool, error) {
			if m.MergedInto.IsZero() {
				fn(&m)
			}
			return ctx.Err() == nil, ctx.Err()
		})
	})
}

// ListOptions filter, sort and page the listing.
type ListOptions struct {
	Status string // "" for all
	Sort   string // "trust" (default), "uptime" or "name"
	Limit  int
	Offset int
}

// listTTL is how long List reuses one read of the catalogue: decoding every
// record per request would cost ~20 ms at 1,000 mints.
const listTTL = 2 * time.Second

type listCache struct {
	mu    sync.Mutex
	at    time.Time
	mints []*Mint // shared: read only
}

// catalogueSnapshot returns every mint, read at most listTTL ago.
func (d *Directory) catalogueSnapshot(ctx context.Context) ([]*Mint, error) {
	c := &d.list
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); c.mints != nil && now.Sub(c.at) < listTTL {
		return c.mints, nil
	}
	var all []*Mint
	if err := d.each(ctx, func(m *Mint) { all = append(all, m) }); err != nil {
		return nil, err
	}
	c.at, c.mints = time.Now(), all
	return all, nil
}

// List returns a page of mints and how many match in all. It may be up to
// two seconds behind.
func (d *Directory) List(ctx context.Context, o ListOptions) ([]*Mint, int, error) {
	snap, err := d.catalogueSnapshot(ctx)
	if err != nil {
		return nil, 0, err
	}
	var all []*Mint
	for _, m := range snap {
		if o.Status == "" || m.Status == o.Status {
			all = append(all, m)
		}
	}
	less := func(a, b *Mint) int { return b.Summary.Trust.Score - a.Summary.Trust.Score }
	switch o.Sort {
	case "uptime":
		less = func(a, b *Mint) int { return cmpFloat(deref(b.Summary.Uptime30d, -1), deref(a.Summary.Uptime30d, -1)) }
	case "name":
		less = func(a, b *Mint) int {
			return strings.Compare(strings.ToLower(a.Name+"\xff"+a.CanonicalURL), strings.ToLower(b.Name+"\xff"+b.CanonicalURL))
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if c := less(all[i], all[j]); c != 0 {
			return c < 0
		}
		return bytes.Compare(all[i].ID[:], all[j].ID[:]) < 0
	})
	total := len(all)
	lo := min(o.Offset, total)
	hi := min(lo+o.Limit, total)
	return all[lo:hi], total, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func deref(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}
