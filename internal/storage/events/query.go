package events

import (
	"context"
	"errors"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Query calls yield for each stored event matching f exactly, newest first, stopping after
// f.Limit yielded events when f.Limit > 0 (0 means no limit: the caller clamps), when yield
// returns false, or when ctx ends. Events for which skip returns true are passed over and do
// not count towards the limit. raw is the event's JSON, valid only during yield.
//
// A filter with "limit":0 (LimitZero) yields nothing, one with a search
// (NIP-50) or a condition on a tag name longer than one letter matches nothing.
// Expired events (NIP-40) are never yielded. The error is ctx's when it ended.
func (s *Store) Query(ctx context.Context, f nostr.Filter, skip func(Meta) bool, yield func(m Meta, raw []byte) bool) error {
	if f.LimitZero {
		return nil
	}
	p := newPlan(f)
	if p.none {
		return nil
	}
	n := 0
	var ferr error
	err := s.db.View(func(txn *kv.Txn) error {
		return s.scan(ctx, txn, []*plan{p}, true, func(id, val []byte) bool {
			m, err := meta(id, val)
			if err != nil {
				ferr = err
				return false
			}
			if skip != nil && skip(m) {
				return true
			}
			if !yield(m, val[headerLen:]) {
				return false
			}
			n++
			return f.Limit <= 0 || n < f.Limit
		})
	})
	if err == nil {
		err = ferr
	}
	return err
}

// Count counts the distinct stored events matching any of filters, leaving out those skip drops.
// Limits are ignored; expired events are not counted.
func (s *Store) Count(ctx context.Context, filters []nostr.Filter, skip func(Meta) bool) (int64, error) {
	plans := make([]*plan, 0, len(filters))
	for _, f := range filters {
		if p := newPlan(f); !p.none {
			plans = append(plans, p)
		}
	}
	if len(plans) == 0 {
		return 0, nil
	}
	var n int64
	var ferr error
	err := s.db.View(func(txn *kv.Txn) error {
		return s.scan(ctx, txn, plans, skip != nil, func(id, val []byte) bool {
			if skip != nil {
				m, err := meta(id, val)
				if err != nil {
					ferr = err
					return false
				}
				if skip(m) {
					return true
				}
			}
			n++
			return true
		})
	})
	if err == nil {
		err = ferr
	}
	return n, err
}

// Address returns the event stored at an address: a replaceable or
// addressable kind, a pubkey and d ("" for replaceable kinds, and the address
// of an addressable event without a d tag). It is nil when there is none or
// it expired.
func (s *Store) Address(ctx context.Context, kind int, pubkey, d string) (*nostr.Event, error) {
	var pk [32]byte
	if !hasAddress(kind) || !parseHex32(pubkey, &pk) {
		return nil, nil
	}
	if !nostr.IsAddressableKind(kind) {
		d = ""
	}
	var ev *nostr.Event
	err := s.db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(addressKey(uint16(kind), pk[:], d))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		tail, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		if len(tail) != tailLen {
			return nil // damaged: see put
		}
		item, err = txn.Get(eventKey(tail))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return item.Value(func(val []byte) error {
			m, err := meta(tail[8:], val)
			if err != nil {
				return err
			}
			if m.Expiration != 0 && int64(m.Expiration) <= s.now().Unix() {
				return nil
			}
			ev = &nostr.Event{}
			return ev.UnmarshalJSON(val[headerLen:])
		})
	})
	if err == nil && ev != nil && address(ev.Kind, ev.Tags) != d {
		ev = nil // two long d values with one SHA-256: never seen, but stay exact
	}
	return ev, err
}
