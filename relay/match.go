package relay

import (
	"encoding/hex"
	"math"
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// liveFilter is one filter of an open subscription, compiled at REQ time
// for matching broadcasts: it matches exactly the events nostr.Filter's
// Matches does (limit aside, which live events ignore), with its value lists
// made sets so that a filter of thousands of values costs a lookup, not a
// scan. The registry indexes it under one field (by); an event found there
// satisfies that field already, so the field is left out of the check.
type liveFilter struct {
	s *sub

	by       field
	hexKeys  [][32]byte // the ids or authors it is indexed under (byID, byAuthor)
	kindKeys []int      // byKind
	tagName  string     // byTag: the tag, and its values it is indexed under
	tagKeys  []string

	ids, authors       *valueSet[[32]byte] // nil: any
	kinds              *valueSet[int]
	tags               []tagCond // every one must hold
	since, until       nostr.Timestamp
	hasSince, hasUntil bool
}

// field is what a filter is indexed under: the most selective field it
// names (as strfry's ActiveMonitors does), or none.
type field uint8

const (
	byNothing field = iota // names no id, author, kind or tag: checked against every event
	byID
	byAuthor
	byTag
	byKind
)

// tagCond is one "#x" condition: a tag named name with one of values.
type tagCond struct {
	name   string
	values *valueSet[string]
}

func (c tagCond) holds(tags nostr.Tags) bool {
	for _, t := range tags {
		if len(t) >= 2 && t[0] == c.name && c.values.has(t[1]) {
			return true
		}
	}
	return false
}

// compileFilter compiles f for s; nil when f can match no event. Ids and
// authors that are not 64 lowercase hex characters and kinds outside 0 to
// 65535 are dropped: no event the relay broadcasts has them.
func compileFilter(s *sub, f nostr.Filter) *liveFilter {
	if matchesNothing(f) {
		return nil
	}
	lf := &liveFilter{s: s}
	if f.Since != nil {
		lf.since, lf.hasSince = *f.Since, true
	}
	if f.Until != nil {
		lf.until, lf.hasUntil = *f.Until, true
	}
	if f.IDs != nil {
		if lf.ids = hexSet(f.IDs); lf.ids.len() == 0 {
			return nil
		}
	}
	if f.Authors != nil {
		if lf.authors = hexSet(f.Authors); lf.authors.len() == 0 {
			return nil
		}
	}
	if f.Kinds != nil {
		if lf.kinds = kindSet(f.Kinds); lf.kinds.len() == 0 {
			return nil
		}
	}
	for name, values := range f.Tags {
		if values != nil {
			lf.tags = append(lf.tags, tagCond{name, newValueSet(values)})
		}
	}
	lf.chooseIndex()
	return lf
}

func hexSet(values []string) *valueSet[[32]byte] {
	s := &valueSet[[32]byte]{}
	for _, v := range values {
		var b [32]byte
		if isHex(v, 64) {
			hex.Decode(b[:], []byte(v))
			s.add(b)
		}
	}
	return s
}

func kindSet(kinds []int) *valueSet[int] {
	s := &valueSet[int]{}
	for _, k := range kinds {
		if k >= 0 && k <= 65535 {
			s.add(k)
		}
	}
	return s
}

// chooseIndex picks the field to index the filter under: its ids (each
// names one event), else its authors or the tag condition with the fewest
// values (few index entries, few candidates), else its kinds (many events
// share one), else nothing. That field's set becomes the index's keys.
func (f *liveFilter) chooseIndex() {
	if f.ids != nil {
		f.by, f.hexKeys, f.ids = byID, f.ids.keys(), nil
		return
	}
	best, fewest := -1, math.MaxInt // best: the tag condition chosen; ties go to authors
	if f.authors != nil {
		fewest = f.authors.len()
	}
	for i, c := range f.tags {
		if n := c.values.len(); n < fewest {
			best, fewest = i, n
		}
	}
	switch {
	case best >= 0:
		c := f.tags[best]
		f.by, f.tagName, f.tagKeys = byTag, c.name, c.values.keys()
		f.tags = slices.Delete(f.tags, best, best+1) // which clears the tail: the set is not kept
	case f.authors != nil:
		f.by, f.hexKeys, f.authors = byAuthor, f.authors.keys(), nil
	case f.kinds != nil:
		f.by, f.kindKeys, f.kinds = byKind, f.kinds.keys(), nil
	}
}

// matches checks an event the index offered against the rest of the
// filter; id and pk are the event's raw id and pubkey.
func (f *liveFilter) matches(ev *nostr.Event, id, pk [32]byte) bool {
	if (f.hasSince && ev.CreatedAt < f.since) || (f.hasUntil && ev.CreatedAt > f.until) {
		return false
	}
	if (f.ids != nil && !f.ids.has(id)) || (f.authors != nil && !f.authors.has(pk)) || (f.kinds != nil && !f.kinds.has(ev.Kind)) {
		return false
	}
	for _, c := range f.tags {
		if !c.holds(ev.Tags) {
			return false
		}
	}
	return true
}

// valueSet is a set of filter values: a list while it is short (cheaper to
// build, hold and scan than a map), a map beyond.
type valueSet[K comparable] struct {
	few  []K
	many map[K]struct{}
}

const fewValues = 8

func newValueSet[K comparable](values []K) *valueSet[K] {
	s := &valueSet[K]{}
	for _, v := range values {
		s.add(v)
	}
	return s
}

// add adds k; false if it was there already.
func (s *valueSet[K]) add(k K) bool {
	if s.has(k) {
		return false
	}
	if s.many != nil {
		s.many[k] = struct{}{}
		return true
	}
	if len(s.few) < fewValues {
		s.few = append(s.few, k)
		return true
	}
	s.many = make(map[K]struct{}, 2*fewValues)
	for _, v := range s.few {
		s.many[v] = struct{}{}
	}
	s.many[k], s.few = struct{}{}, nil
	return true
}

func (s *valueSet[K]) has(k K) bool {
	if s.many != nil {
		_, ok := s.many[k]
		return ok
	}
	for _, v := range s.few {
		if v == k {
			return true
		}
	}
	return false
}

func (s *valueSet[K]) len() int { return len(s.few) + len(s.many) }

// keys lists the set's values.
func (s *valueSet[K]) keys() []K {
	if s.many == nil {
		return s.few
	}
	keys := make([]K, 0, len(s.many))
	for k := range s.many {
		keys = append(keys, k)
	}
	return keys
}
