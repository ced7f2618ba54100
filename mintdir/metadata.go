package mintdir

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Metadata is a mint's current metadata snapshot: the NUT-06 info as served
// when it last changed, and its keysets.
type Metadata struct {
	Info      json.RawMessage `json:"info"`
	Keysets   []Keyset        `json:"keysets"`
	ChangedAt time.Time       `json:"changed_at"`
}

// Keyset is one of a mint's keysets (NUT-02): its unit and fee.
type Keyset struct {
	ID          string  `json:"id"`
	Unit        string  `json:"unit"`
	Active      bool    `json:"active"`
	InputFeePpk *uint64 `json:"input_fee_ppk"`
}

// HistoryEntry records one change of a mint's metadata.
type HistoryEntry struct {
	FetchedAt  time.Time         `json:"fetched_at"`
	ChangeType string            `json:"change_type"`
	Diff       map[string]Change `json:"diff"`
	Version    string            `json:"version"` // the mint's software version after the change
}

// maxURLsPerMint bounds what a mint's info can add to the URL index.
const maxURLsPerMint = 20

// updateMetadata takes in a successful check's info: the snapshot and a
// history entry when its content changed, the keysets when fetched
// (keysetsBody is nil when they were not fetched, empty when that failed).
func (d *Directory) updateMetadata(txn *kv.Txn, m *Mint, info *Info, body, keysetsBody []byte, at time.Time) error {
	id := m.ID
	m.MetaFetchedAt = &at
	if info.Time > 0 {
		t := time.Unix(info.Time, 0).UTC()
		m.ServerTime = &t
	}
	hash := info.Hash()
	changed := hash != m.MetaHash
	if !changed && keysetsBody == nil {
		return nil
	}
	var meta Metadata
	if _, err := kv.GetJSON(txn, metaKey(id), &meta); err != nil {
		return err
	}
	if keysetsBody != nil {
		var ks struct {
			Keysets []Keyset `json:"keysets"`
		}
		if json.Unmarshal(keysetsBody, &ks) == nil && ks.Keysets != nil {
			meta.Keysets = ks.Keysets
		}
		m.KeysetsFetchedAt = &at
	}
	if changed {
		var old *Info
		if len(meta.Info) > 0 {
			if o, err := ParseInfo(meta.Info); err == nil {
				old = &o
			}
		}
		changeType, diff := Diff(old, *info)
		entry := HistoryEntry{FetchedAt: at, ChangeType: changeType, Diff: diff, Version: info.Version}
		if err := kv.PutJSON(txn, timeKey(kHistory, id, at), entry); err != nil {
			return err
		}
		meta.Info, meta.ChangedAt = json.RawMessage(body), at
		m.MetaHash = hash
		if err := d.takeInfo(txn, m, info, at); err != nil {
			return err
		}
	}
	return kv.PutJSON(txn, metaKey(id), meta)
}

// takeInfo copies what the catalogue keeps from new info: its identity (the
// pubkey index), what describes it, and the URLs it advertises.
func (d *Directory) takeInfo(txn *kv.Txn, m *Mint, info *Info, at time.Time) error {
	if err := d.takePubKey(txn, m, info.Pubkey, at); err != nil {
		return err
	}
	takeDescription(m, info)
	return takeURLs(txn, m, info.URLs)
}

// takePubKey moves the mint's entry in the pubkey index to pk.
func (d *Directory) takePubKey(txn *kv.Txn, m *Mint, pk string, at time.Time) error {
	if pk == m.PubKey {
		return nil
	}
	if m.PubKey != "" {
		if owner, ok, _ := lookupID(txn, pubKeyKey(m.PubKey)); ok && owner == m.ID {
			if err := txn.Delete(pubKeyKey(m.PubKey)); err != nil {
				return err
			}
		}
		m.PubKeyChangedAt = &at
	}
	m.PubKey = pk
	if pk == "" {
		return nil
	}
	owner, ok, err := lookupID(txn, pubKeyKey(pk))
	switch {
	case err != nil:
		return err
	case !ok:
		id := m.ID
		return txn.Set(pubKeyKey(pk), id[:])
	case owner != m.ID:
		// Another record claimed the key since this probe began; the next
		// probe merges the two.
		d.log.Warn("mintdir: pubkey claimed meanwhile", "mint_id", m.ID, "pubkey", pk)
	}
	return nil
}

// takeDescription copies the name, icon, derived features and operators
// (the nostr contacts, whose reviews don't count).
func takeDescription(m *Mint, info *Info) {
	m.Name, m.IconURL = info.Name, info.IconURL
	f := info.Features()
	m.Features = &f
	m.Operators = nil
	for _, c := range info.Contact {
		if strings.EqualFold(c.Method, "nostr") {
			if pk, err := pubkey.Parse(strings.TrimPrefix(c.Info, "nostr:")); err == nil {
				m.Operators = append(m.Operators, pk)
			}
		}
	}
}

// takeURLs marks which of the mint's URLs it advertises and adds the new
// ones, up to maxURLsPerMint, unless another mint is known by them.
func takeURLs(txn *kv.Txn, m *Mint, urls []string) error {
	advertised := map[string]bool{}
	var order []string
	for _, raw := range urls {
		if u, err := catalogueURL(raw); err == nil && !advertised[u] {
			advertised[u] = true
			order = append(order, u)
		}
	}
	for i := range m.URLs {
		m.URLs[i].Advertised = advertised[m.URLs[i].URL]
	}
	id := m.ID
	for _, u := range order {
		if m.hasURL(u) || len(m.URLs) >= maxURLsPerMint {
			continue
		}
		_, taken, err := lookupID(txn, urlKey(u))
		if err != nil {
			return err
		}
		if taken {
			continue // another mint's URL; a shared pubkey would merge the two
		}
		if err := txn.Set(urlKey(u), id[:]); err != nil {
			return err
		}
		m.URLs = append(m.URLs, MintURL{URL: u, Advertised: true})
	}
	return nil
}

// Metadata returns a mint's current snapshot; ok is false before the first
// successful check.
func (d *Directory) Metadata(ctx context.Context, m *Mint) (meta Metadata, info *Info, ok bool, err error) {
	err = d.db.View(func(txn *kv.Txn) error {
		ok, err = kv.GetJSON(txn, metaKey(m.ID), &meta)
		return err
	})
	if err != nil || !ok || len(meta.Info) == 0 {
		return meta, nil, false, err
	}
	in, perr := ParseInfo(meta.Info)
	if perr != nil {
		return meta, nil, false, nil
	}
	return meta, &in, true, nil
}

// History returns metadata history entries fetched before `before` (zero:
// any), newest first, at most limit.
func (d *Directory) History(ctx context.Context, m *Mint, before time.Time, limit int) ([]HistoryEntry, error) {
	return newestBefore[HistoryEntry](d, kHistory, m.ID, before, limit)
}
