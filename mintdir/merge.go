package mintdir

import (
	"slices"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// mergeIfKnown handles a check of m that found pubkey: when another mint
// already has that pubkey, m is the same mint under another URL, so its URLs
// move to the other record and m becomes an alias of it. The record that had
// the pubkey first survives (its history is the longer one); its id is
// returned, the zero ID when nothing was merged.
func (d *Directory) mergeIfKnown(m *Mint, pubkey string) (survivor ID, err error) {
	d.mergeMu.Lock()
	defer d.mergeMu.Unlock()
	loser := m.ID
	err = d.db.Update(func(txn *kv.Txn) error {
		survivor = ID{}
		owner, ok, err := lookupID(txn, pubKeyKey(pubkey))
		if err != nil || !ok || owner == loser {
			return err
		}
		s, err := resolve(txn, owner)
		if err != nil || s == nil || s.ID == m.ID {
			return err
		}
		l, err := getMint(txn, loser)
		if err != nil || l == nil || !l.MergedInto.IsZero() {
			return err
		}
		if err := absorb(txn, s, l); err != nil {
			return err
		}
		if err := txn.Delete(scheduleKey(loser)); err != nil {
			return err
		}
		alias := &Mint{ID: l.ID, MergedInto: s.ID, CanonicalURL: l.CanonicalURL, CreatedAt: l.CreatedAt, Source: l.Source, Status: l.Status}
		if err := kv.PutJSON(txn, mintKey(loser), alias); err != nil {
			return err
		}
		survivor = s.ID
		return kv.PutJSON(txn, mintKey(s.ID), s)
	})
	if err != nil || survivor.IsZero() {
		return ID{}, err
	}
	d.log.Info("mintdir: merged a mint found under another URL", "merged", m.ID, "into", survivor, "pubkey", pubkey)
	return survivor, d.dropMintData(loser)
}

// absorb gives the survivor s the loser l's URLs, announcers and, when the
// index has l for it, l's pubkey.
func absorb(txn *kv.Txn, s, l *Mint) error {
	for _, u := range l.URLs {
		if !s.hasURL(u.URL) {
			s.URLs = append(s.URLs, MintURL{URL: u.URL})
		}
		if err := txn.Set(urlKey(u.URL), s.ID[:]); err != nil {
			return err
		}
	}
	for _, a := range l.AnnouncedBy {
		if !slices.Contains(s.AnnouncedBy, a) {
			s.AnnouncedBy = append(s.AnnouncedBy, a)
		}
	}
	if l.PubKey == "" {
		return nil
	}
	if o, ok, _ := lookupID(txn, pubKeyKey(l.PubKey)); ok && o == l.ID {
		return txn.Set(pubKeyKey(l.PubKey), s.ID[:])
	}
	return nil
}

// dropMintData deletes what a merged record collected on its own.
func (d *Directory) dropMintData(id ID) error {
	for _, kind := range perMint {
		if kind == kSchedule {
			continue
		}
		prefix := perMintPrefix(kind, id)
		for {
			var keys [][]byte
			err := d.db.View(func(txn *kv.Txn) error {
				it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
				defer it.Close()
				for it.Rewind(); it.Valid() && len(keys) < 1000; it.Next() {
					keys = append(keys, it.Item().KeyCopy(nil))
				}
				return nil
			})
			if err != nil || len(keys) == 0 {
				if err != nil {
					return err
				}
				break
			}
			if err := d.deleteKeys(keys); err != nil {
				return err
			}
		}
	}
	return nil
}
