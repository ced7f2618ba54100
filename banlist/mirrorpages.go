package banlist

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/policies"
)

// A follower keeps the primary's whole list as pages (kindMirrorPage), not
// as a ban record, an index record and history per key: at a million bans
// those were 400 MB written through badger, 31 s and 322 MiB at a
// follower's first sync, for history the primary has. A page is one page
// of the primary's list as it came, packed (about 34 bytes a ban), under a
// time-ordered id. The store's bans are then the pages, oldest first, with
// every key's own record (kindBanByPubKey → kindBan) over them: a change
// made one key at a time after the pages (a change of the primary's, or
// this node's own once it no longer follows) is a full record, and a page
// that names a key again drops that key's index entry. A whole list taken
// anew deletes the pages older than itself once it is all in; until then
// both are loaded, so a key banned in the old list and the new one is
// never allowed, even across a kill.

// pageFormat is the first byte of a page's value.
const pageFormat = 1

// maxPage is the bans of a full page record: 32,768 at 34 bytes or more
// each make over 1 MiB, badger's value threshold (the most it allows), so
// a full page goes to badger's value log and its tree holds a pointer.
// Pages of 10,000 (340 KB) went through badger's memtables, the table
// builders of their flushes and compactions (which grow a block holding a
// big value by doubling it, about 1 MB a page: 104 MB of builders live in
// a heap profile), and the tables: at a million bans a follower's first
// sync peaked at 156–174 MiB anonymous; with the pages in the value log
// 115 MiB, and 65 MiB at followGC's GOGC. A txn counts a value in the
// value log as its pointer, so a page stays well within one transaction.
// The pages a list taken anew or rewritten (pagesBloated) deletes stay in
// the value log, about 34 bytes a ban each time, until the store collects
// it (kv's collectValueLogs).
const maxPage = 32_768

func pageKey(id []byte) []byte { return kv.Key(kv.PrefixBanlist, kindMirrorPage, id) }

// encodePage packs bans: the format, the distinct reasons, then each ban
// as its raw key, the index of its reason and its expiry (0: none).
func encodePage(bans []policies.Ban) []byte {
	var reasons []string
	index := map[string]uint64{}
	for _, b := range bans {
		if _, ok := index[b.Reason]; !ok {
			index[b.Reason] = uint64(len(reasons))
			reasons = append(reasons, b.Reason)
		}
	}
	out := make([]byte, 0, 1+len(bans)*35)
	out = append(out, pageFormat)
	out = binary.AppendUvarint(out, uint64(len(reasons)))
	for _, r := range reasons {
		out = binary.AppendUvarint(out, uint64(len(r)))
		out = append(out, r...)
	}
	for _, b := range bans {
		raw, _ := hex.DecodeString(b.PubKey)
		out = append(out, raw...)
		out = binary.AppendUvarint(out, index[b.Reason])
		out = binary.AppendUvarint(out, uint64(max(b.ExpiresAt, 0)))
	}
	return out
}

var errBadPage = errors.New("a mirrored page of bans is not of a known format")

// eachOfPage calls f with each ban of a page, its key raw.
func eachOfPage(v []byte, f func(pk *[32]byte, reason string, expiresAt int64)) error {
	if len(v) == 0 || v[0] != pageFormat {
		return errBadPage
	}
	v = v[1:]
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)) {
		return errBadPage
	}
	v = v[w:]
	reasons := make([]string, n)
	for i := range reasons {
		l, w := binary.Uvarint(v)
		if w <= 0 || l > uint64(len(v)-w) {
			return errBadPage
		}
		reasons[i], v = string(v[w:w+int(l)]), v[w+int(l):]
	}
	var pk [32]byte
	for len(v) > 0 {
		if len(v) < 34 {
			return errBadPage
		}
		copy(pk[:], v)
		v = v[32:]
		r, w1 := binary.Uvarint(v)
		if w1 <= 0 || r >= uint64(len(reasons)) {
			return errBadPage
		}
		e, w2 := binary.Uvarint(v[w1:])
		if w2 <= 0 {
			return errBadPage
		}
		v = v[w1+w2:]
		f(&pk, reasons[r], int64(e))
	}
	return nil
}

// putPage writes bans (sorted by key, as a primary's page comes) as a page
// inside txn, and drops the index entries of the keys it names, so the
// page is what the store says of them. The index is read once, over the
// page's range of keys.
func putPage(txn *kv.Txn, id []byte, bans []policies.Ban) error {
	if len(bans) == 0 {
		return nil
	}
	if err := txn.Set(pageKey(id), encodePage(bans)); err != nil {
		return err
	}
	named := make([][]byte, len(bans))
	for i, b := range bans {
		named[i] = pubKeyIndex(b.PubKey)
	}
	slices.SortFunc(named, bytes.Compare)
	prefix := []byte{kv.PrefixBanlist, kindBanByPubKey}
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
	var drop [][]byte
	for it.Seek(named[0]); it.ValidForPrefix(prefix); it.Next() {
		k := it.Item().Key()
		if bytes.Compare(k, named[len(named)-1]) > 0 {
			break
		}
		if _, ok := slices.BinarySearchFunc(named, k, bytes.Compare); ok {
			drop = append(drop, it.Item().KeyCopy(nil))
		}
	}
	it.Close()
	for _, k := range drop {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// loadPages puts the bans of every page, oldest first, active at now, in
// the snapshot, and returns how many it read.
func (s *Service) loadPages(txn *kv.Txn, now int64) (int, error) {
	prefix := []byte{kv.PrefixBanlist, kindMirrorPage}
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix}) // values read one at a time: 64 pages read ahead would be 70 MB
	defer it.Close()
	var batch []policies.Ban // made at the first page
	read := 0
	for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
		if batch == nil {
			batch = make([]policies.Ban, 0, maxPage)
			// As while a whole list is taken (followGC): what stays is
			// the snapshot's keys; each page's decoding is garbage.
			defer followGC()()
		} else {
			s.releasePages() // the pages read so far
		}
		// Ids made from now on follow every page's, whatever the clock
		// says: the pages' order is the order they are applied in.
		if at := binary.BigEndian.Uint64(it.Item().Key()[len(prefix):]); at > s.lastID.Load() {
			s.lastID.Store(at)
		}
		err := it.Item().Value(func(v []byte) error {
			return eachOfPage(v, func(pk *[32]byte, reason string, exp int64) {
				read++
				if exp == 0 || exp > now {
					batch = append(batch, policies.Ban{PubKey: hex.EncodeToString(pk[:]), Reason: reason, ExpiresAt: exp})
				}
			})
		})
		if err != nil {
			return 0, err
		}
		s.list.BanMany(batch)
		batch = batch[:0]
	}
	return read, nil
}

// releasePages gives back the pages of the value log, where full pages
// are (maxPage), that this process wrote or read: else a follower's RSS
// holds them, though the snapshot is what it reads.
func (s *Service) releasePages() {
	if err := s.db.ReleaseValueLogs(); err != nil {
		s.log.Debug("ban list: the value log's pages not given back", "err", err)
	}
}

// pagesSince calls f with every key of the pages written since from.
func pagesSince(txn *kv.Txn, from time.Time, f func(pk string)) error {
	prefix := []byte{kv.PrefixBanlist, kindMirrorPage}
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix}) // values read one at a time: 64 pages read ahead would be 70 MB
	defer it.Close()
	for it.Seek(pageKey(kv.U64(uint64(from.UnixNano())))); it.ValidForPrefix(prefix); it.Next() {
		err := it.Item().Value(func(v []byte) error {
			return eachOfPage(v, func(pk *[32]byte, _ string, _ int64) { f(hex.EncodeToString(pk[:])) })
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// dropPagesBefore deletes the pages older than id, a transaction at a time.
func (s *Service) dropPagesBefore(id []byte) error {
	prefix := []byte{kv.PrefixBanlist, kindMirrorPage}
	for {
		var keys [][]byte
		err := s.db.View(func(txn *kv.Txn) error {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Rewind(); it.ValidForPrefix(prefix) && len(keys) < 1000; it.Next() {
				if bytes.Compare(it.Item().Key()[len(prefix):], id) >= 0 {
					break
				}
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		err = s.db.Update(func(txn *kv.Txn) error {
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// mirroredBan is the ban a page holds of pk, as a record, when pk has no
// record of its own but the snapshot holds it banned: what a change of it
// one key at a time replaces.
func (s *Service) mirroredBan(pk string, now time.Time) (Ban, bool) {
	b, ok := s.list.Banned(pk, now.Unix())
	if !ok {
		return Ban{}, false
	}
	ban := Ban{ID: hex.EncodeToString(s.newID(now)), PubKey: pk, Reason: b.Reason, CreatedAt: now.Unix(), BannedBy: s.mirrorActor()}
	if b.ExpiresAt != 0 {
		ban.ExpiresAt = &b.ExpiresAt
	}
	return ban, true
}

// putPage writes bans of a primary's whole list (sorted by key, at most
// maxPage) as one page, with one audit entry if any of them is new or
// changed here, and enforces them. A ban with no end takes its key off the
// allow list, as Ban does.
func (s *Service) putPage(actor string, bans []policies.Ban, now time.Time) error {
	id := s.newID(now)
	changed := 0
	for _, b := range bans {
		if !s.holds(b, now.Unix()) {
			changed++
		}
	}
	var unallowed []string
	return s.update(func(txn *kv.Txn) error {
		unallowed = unallowed[:0]
		for _, b := range bans {
			if b.ExpiresAt != 0 || !s.list.AllowListed(b.PubKey) {
				continue
			}
			if _, u, err := removeRecord[AllowedPubKey](s, txn, actor, "pubkey.unallow", b.PubKey, allowedPubKeyKey(b.PubKey), nil); err != nil {
				return err
			} else if u {
				unallowed = append(unallowed, b.PubKey)
			}
		}
		if err := putPage(txn, id, bans); err != nil || changed == 0 {
			return err
		}
		batch := hex.EncodeToString(id)
		e := AuditEntry{ID: batch, At: now.Unix(), Actor: actor, Action: "ban.batch", Target: batch,
			Before: rawJSON(nil), After: rawJSON(map[string]int{"bans": changed})}
		return kv.PutJSON(txn, kv.Key(kv.PrefixBanlist, kindAudit, id), e)
	}, func() {
		for _, pk := range unallowed {
			s.list.UnallowPubKey(pk)
		}
		s.list.BanMany(bans)
		s.paged.Add(int64(len(bans)))
	})
}

// pagesBloated reports whether the pages hold over twice the bans held: a
// follower restarted often while its primary's list changes writes the
// pages that changed each time and keeps the rest (PutBans).
func (s *Service) pagesBloated() bool {
	return s.paged.Load() > 2*int64(s.list.ActiveBans(s.now().Unix()))+maxPage
}

// rewritePages writes the bans held anew as pages, in order of key, and
// returns the id the pages before them have (to be deleted); on a failure
// it returns nil and they are kept.
func (s *Service) rewritePages() []byte {
	now := s.now()
	from := s.newID(now)
	s.paged.Store(0)
	for after := ""; ; {
		bans, next := s.list.Page(after, maxPage, now.Unix())
		if err := s.putPage(s.mirrorActor(), bans, now); err != nil {
			s.log.Warn("ban list follow: the pages not rewritten", "err", err)
			return nil
		}
		if after = next; next == "" {
			return from
		}
	}
}

// pageBans lists the bans of the pages, newest first, at most limit, that
// are what the store says of their key now: none of its own record, and
// the terms the snapshot holds (a ban a newer page repeats is listed
// twice only while a whole list is being taken). Each is a record as the
// admin listing shows it: its id the page's time and its place there, its
// batch the page.
func (s *Service) pageBans(ctx context.Context, txn *kv.Txn, state string, until int64, limit int, now int64) ([]Ban, error) {
	prefix := []byte{kv.PrefixBanlist, kindMirrorPage}
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix, Reverse: true})
	defer it.Close()
	seek := seekUntil(kindMirrorPage, until)
	if seek == nil {
		seek = append(slices.Clone(prefix), 0xFF)
	}
	var out []Ban
	for it.Seek(seek); it.ValidForPrefix(prefix) && len(out) < limit; it.Next() {
		id := it.Item().KeyCopy(nil)[len(prefix):]
		var page []Ban
		err := it.Item().Value(func(v []byte) error {
			i := uint32(0)
			return eachOfPage(v, func(pk *[32]byte, reason string, exp int64) {
				i++
				if lapsed := exp != 0 && exp <= now; state != "" && lapsed != (state == StateExpired) {
					return
				}
				b := Ban{ID: hex.EncodeToString(binary.BigEndian.AppendUint32(slices.Clone(id[:8]), i-1)), PubKey: hex.EncodeToString(pk[:]),
					Reason: reason, CreatedAt: int64(binary.BigEndian.Uint64(id) / uint64(time.Second)), BannedBy: s.mirrorActor(), Batch: hex.EncodeToString(id)}
				if exp != 0 {
					b.ExpiresAt = &exp
				}
				page = append(page, b)
			})
		})
		if err != nil {
			return nil, err
		}
		for _, b := range slices.Backward(page) {
			if len(out) < limit && s.pagedNow(txn, b, now) {
				out = append(out, b)
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pagedNow reports whether b, of a page, is what the store says of its key.
func (s *Service) pagedNow(txn *kv.Txn, b Ban, now int64) bool {
	if own, err := txn.Has(pubKeyIndex(b.PubKey)); err != nil || own {
		return false
	}
	exp := int64(0)
	if b.ExpiresAt != nil {
		exp = *b.ExpiresAt
	}
	if cur, ok := s.list.Banned(b.PubKey, now); ok {
		return cur.Reason == b.Reason && cur.ExpiresAt == exp
	}
	return exp != 0 && exp <= now // lapsed: expired, as a record would be
}

// holds reports whether the snapshot holds b as it is.
func (s *Service) holds(b policies.Ban, now int64) bool {
	cur, ok := s.list.Banned(b.PubKey, now)
	return ok && cur == b
}

// changesAny reports whether any of bans is new or changed here.
func (s *Service) changesAny(bans []policies.Ban, now int64) bool {
	return slices.ContainsFunc(bans, func(b policies.Ban) bool { return !s.holds(b, now) })
}

// mirrorActor names who made the bans of the pages: the mirror of the
// primary followed, or of one no longer named (the pages do not say).
func (s *Service) mirrorActor() string {
	if s.primary == "" {
		return "follow"
	}
	return s.followActor()
}
