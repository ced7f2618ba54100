package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// prepared is an event made ready to write: its decoded values, its stored
// value and index keys, its address, and what the free-space gate is asked
// for it.
type prepared struct {
	d           decodedEvent
	val         []byte
	keys        [][]byte
	addr        string
	replaceable bool
	cost        int
}

// prepare validates ev and builds what put writes for it.
func prepare(ev *nostr.Event) (prepared, error) {
	d, err := validate(ev)
	if err != nil {
		return prepared{}, err
	}
	raw, err := ev.MarshalJSON()
	if err != nil {
		return prepared{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	p := prepared{d: d, val: append(d.header(), raw...), keys: d.indexKeys(), replaceable: hasAddress(ev.Kind)}
	if p.replaceable {
		p.addr = address(ev.Kind, ev.Tags)
	}
	p.cost = len(p.val) + tombstoneCost(ev.Kind, ev.Tags)
	for _, k := range p.keys {
		p.cost += len(k) + entryOverhead
	}
	return p, nil
}

// errTooManyTags is what an event too big for a transaction of its own is
// refused with.
var errTooManyTags = fmt.Errorf("%w: the event has too many tags to store", ErrInvalid)

// SaveBatch stores evs as Save stores each, in as few transactions as fit
// (one, unless badger finds it too big: then each half, and so on): what
// a bulk import writes, many events per commit as strfry's writer does,
// where a commit per event would spend most of its time committing. The
// events are written in order, each seeing those before it, so an event
// repeated in the batch is a Duplicate and an older version of an address
// after a newer one is Superseded, as if saved one by one. out[i] is what
// became of evs[i], unless errs[i] says why it is invalid (ErrInvalid,
// ErrBadID); err is the store's failure, and then none of the batch is
// stored but the parts committed before it when the batch was split.
func (s *Store) SaveBatch(ctx context.Context, evs []*nostr.Event) (out []Outcome, errs []error, err error) {
	out, errs = make([]Outcome, len(evs)), make([]error, len(evs))
	var ps []prepared
	var at []int
	for i, ev := range evs {
		p, err := prepare(ev)
		if err != nil {
			errs[i] = err
			continue
		}
		ps, at = append(ps, p), append(at, i)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	outs, bad, err := s.putAll(ps)
	if err != nil {
		return nil, nil, err
	}
	for j, i := range at {
		out[i], errs[i] = outs[j], bad[j]
	}
	return out, errs, nil
}

// putAll writes ps in one transaction, or in halves when that is too big
// for badger; bad[j] is set for an event too big on its own.
func (s *Store) putAll(ps []prepared) (out []Outcome, bad []error, err error) {
	if len(ps) == 0 {
		return nil, nil, nil
	}
	cost := 0
	for i := range ps {
		cost += ps[i].cost
	}
	out, bad = make([]Outcome, len(ps)), make([]error, len(ps))
	err = s.update(cost, func(txn *kv.Txn) error {
		for i := range ps {
			p := &ps[i]
			o, err := s.put(txn, &p.d, p.val, p.keys, p.addr, p.replaceable)
			if err != nil {
				return err
			}
			out[i] = o
		}
		return nil
	})
	switch {
	case !errors.Is(err, kv.ErrTxnTooBig):
		return out, bad, err
	case len(ps) == 1:
		bad[0] = errTooManyTags
		return out, bad, nil
	}
	half := len(ps) / 2
	out1, bad1, err := s.putAll(ps[:half])
	if err != nil {
		return nil, nil, err
	}
	out2, bad2, err := s.putAll(ps[half:])
	if err != nil {
		return nil, nil, err
	}
	return append(out1, out2...), append(bad1, bad2...), nil
}
