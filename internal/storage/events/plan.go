package events

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// maxAuthorKindScans is how many (author, kind) pairs a filter may have for
// the store to scan the author-kind index; beyond it, it scans by author and
// reads each event to check its kind. Ranges past the limit'th result are
// never opened (see newest), so a home feed's 300 follows × 2 kinds cost
// seeks only for the follows that posted lately.
const maxAuthorKindScans = 1024

// maxAddressLookups is how many addresses a filter may name for the store
// to look each one up (two point reads) rather than scan an index: a point
// read costs a fraction of an index scan's seek, which visits every level
// of badger's tree (see chooseScans).
const maxAddressLookups = 4096

// plan is how one filter is answered: which index ranges to scan (or which
// ids to look up) and which conditions to check on each candidate.
type plan struct {
	f       nostr.Filter
	none    bool     // the filter cannot match anything
	scans   [][]byte // index prefixes; every key below one ends with ts and id
	ids     [][]byte // instead of scans: the ids to look up
	addrs   [][]byte // instead of scans: the address keys to look up
	kinds   map[uint16]bool
	kindSet uint64 // bit h set for each kind whose kindMeta hash is h
	authors map[[32]byte]bool
	idSet   map[[32]byte]bool
	tags    []tagCond // tag conditions the scan does not guarantee
	verify  bool      // a tag value was hashed: compare the decoded event too
	covered bool      // the scanned ranges hold only events matching the whole filter
	dense   bool      // the scanned ranges are kinds or time: their events lie close together
	since   []byte    // encoded since: scans stop past it
	until   []byte    // encoded until: scans start there
}

// tagCond is one tag condition: the event must have a key under one of the
// prefixes (prefixTag, name, value).
type tagCond struct {
	prefixes [][]byte
}

func newPlan(f nostr.Filter) *plan {
	p := &plan{f: f}
	if f.Search != "" { // NIP-50 is not supported: nothing matches a search
		p.none = true
		return p
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		p.none = true
		return p
	}
	if f.Since != nil {
		p.since = encodeTS(nil, *f.Since)
	}
	if f.Until != nil {
		p.until = encodeTS(nil, *f.Until)
	}
	p.takeIDs()
	p.takeKinds()
	authors := p.takeAuthors()
	p.takeTags()
	if p.none || p.ids != nil {
		return p
	}
	if p.addrs = p.addresses(authors); p.addrs == nil {
		p.chooseScans(authors)
	}
	return p
}

// addresses lists the address keys of every event the filter can match,
// or nil when it cannot tell: it can when it names authors and only
// replaceable kinds (profiles, contact lists, relay lists), which the store
// keeps one of per author and kind. Reading those finds every candidate
// (the other conditions are checked on each as usual) without a scan.
// Addressable kinds are not looked up by #d: an event with two d tags
// matches either, but its address is its first.
func (p *plan) addresses(authors [][]byte) [][]byte {
	if authors == nil || p.kinds == nil || len(authors)*len(p.kinds) > maxAddressLookups {
		return nil
	}
	var keys [][]byte
	for k := range p.kinds {
		if !nostr.IsReplaceableKind(int(k)) {
			return nil
		}
		for _, a := range authors {
			keys = append(keys, addressKey(k, a, ""))
		}
	}
	return keys
}

func (p *plan) takeIDs() {
	if p.f.IDs == nil {
		return
	}
	p.idSet = map[[32]byte]bool{}
	for _, s := range p.f.IDs {
		var id [32]byte
		if parseHex32(s, &id) && !p.idSet[id] {
			p.idSet[id] = true
			p.ids = append(p.ids, id[:])
		}
	}
	p.none = p.none || len(p.ids) == 0
}

func (p *plan) takeKinds() {
	if p.f.Kinds == nil {
		return
	}
	p.kinds = map[uint16]bool{}
	for _, k := range p.f.Kinds {
		if k >= 0 && k <= 0xFFFF {
			p.kinds[uint16(k)] = true
			p.kindSet |= 1 << (kindMeta(uint16(k)) >> 2)
		}
	}
	p.none = p.none || len(p.kinds) == 0
}

// takeAuthors returns the filter's distinct valid authors as bytes.
func (p *plan) takeAuthors() (authors [][]byte) {
	if p.f.Authors == nil {
		return nil
	}
	p.authors = map[[32]byte]bool{}
	for _, s := range p.f.Authors {
		var pk [32]byte
		if parseHex32(s, &pk) && !p.authors[pk] {
			p.authors[pk] = true
			authors = append(authors, pk[:])
		}
	}
	p.none = p.none || len(authors) == 0
	return authors
}

func (p *plan) takeTags() {
	names := make([]string, 0, len(p.f.Tags))
	for name, values := range p.f.Tags {
		if values != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if len(name) != 1 { // not indexed: see the package documentation
			p.none = true
			return
		}
		var c tagCond
		seen := map[string]bool{}
		for _, v := range p.f.Tags[name] {
			k, hashed := tagKey(name[0], v)
			p.verify = p.verify || hashed
			if !seen[string(k)] {
				seen[string(k)] = true
				c.prefixes = append(c.prefixes, k)
			}
		}
		if len(c.prefixes) == 0 {
			p.none = true
			return
		}
		p.tags = append(p.tags, c)
	}
}

// chooseScans picks the index to scan. Authors first: one author's events
// are few next to a kind's or even a tag's; then the tag condition with the
// fewest values; then kinds; then time alone.
func (p *plan) chooseScans(authors [][]byte) {
	var kinds []uint16
	for k := range p.kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	switch {
	case authors != nil && kinds != nil && len(authors)*len(kinds) <= maxAuthorKindScans:
		for _, a := range authors {
			for _, k := range kinds {
				p.scans = append(p.scans, binary.BigEndian.AppendUint16(join(prefixAuthorKind, a), k))
			}
		}
		p.covered = len(p.tags) == 0
	case authors != nil:
		for _, a := range authors {
			p.scans = append(p.scans, join(prefixAuthor, a))
		}
		p.covered = len(p.tags) == 0 && kinds == nil
	case len(p.tags) > 0:
		best := 0
		for i, c := range p.tags {
			if len(c.prefixes) < len(p.tags[best].prefixes) {
				best = i
			}
		}
		p.scans = p.tags[best].prefixes
		p.tags = slices.Delete(p.tags, best, best+1)
		p.covered = len(p.tags) == 0 && kinds == nil && !p.verify
	case kinds != nil:
		for _, k := range kinds {
			p.scans = append(p.scans, binary.BigEndian.AppendUint16([]byte{prefixKind}, k))
		}
		p.covered, p.dense = true, true
	default:
		p.scans = [][]byte{{prefixEvent}}
		p.covered, p.dense = true, true
	}
}

// mayAccept is false when meta, an index key's user meta, says that the
// event's kind is none the plan asks for; true when it may be.
func (p *plan) mayAccept(meta byte) bool {
	return p.kinds == nil || meta&flagKind == 0 || p.kindSet&(1<<(meta>>2)) != 0
}

// accepts checks a candidate the plan's scan found against the rest of the
// filter. tail is its ts and id, val its stored value.
func (p *plan) accepts(txn *kv.Txn, tail, val []byte, buf *[]byte) (bool, error) {
	if p.kinds != nil && !p.kinds[binary.BigEndian.Uint16(val[1:])] {
		return false, nil
	}
	if p.authors != nil && !p.authors[[32]byte(val[19:51])] {
		return false, nil
	}
	if p.idSet != nil && !p.idSet[[32]byte(tail[8:])] {
		return false, nil
	}
	createdAt := nostr.Timestamp(binary.BigEndian.Uint64(val[3:]))
	if p.f.Since != nil && createdAt < *p.f.Since || p.f.Until != nil && createdAt > *p.f.Until {
		return false, nil
	}
	for _, c := range p.tags {
		found := false
		for _, prefix := range c.prefixes {
			*buf = append(append((*buf)[:0], prefix...), tail...)
			_, err := txn.Get(*buf)
			if err == nil {
				found = true
				break
			}
			if !errors.Is(err, kv.ErrNotFound) {
				return false, err
			}
		}
		if !found {
			return false, nil
		}
	}
	if p.verify {
		var ev nostr.Event
		if err := ev.UnmarshalJSON(val[headerLen:]); err != nil {
			return false, err
		}
		return p.f.Matches(&ev), nil
	}
	return true, nil
}
