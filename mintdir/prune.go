package mintdir

import (
	"context"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Retention of raw data; hourly rollups stay (they are small and make the
// long-term record).
const (
	keepChecks   = 35 * 24 * time.Hour
	keep5m       = 35 * 24 * time.Hour
	keepViewHour = 48 * time.Hour
	keepViewDay  = 35 * 24 * time.Hour
)

// Prune deletes raw checks and 5-minute rollups older than 35 days, view
// counters no query reads any more, and vantages no longer fresh.
func (d *Directory) Prune(ctx context.Context) error {
	now := d.now()
	if err := d.pruneVantages(ctx); err != nil {
		return err
	}
	targets, err := d.targets(ctx)
	if err != nil {
		return err
	}
	for _, t := range targets {
		id, err := ParseID(t.ID)
		if err != nil {
			continue
		}
		ranges := []struct {
			prefix []byte
			before []byte
		}{
			{perMintPrefix(kCheck, id), timeKey(kCheck, id, now.Add(-keepChecks))},
			{key(kRollup, id[:], []byte{level5m}), rollupKey(id, level5m, now.Add(-keep5m))},
			{perMintPrefix(kViewHour, id), viewHourKey(id, unixHour(now.Add(-keepViewHour)))},
			{perMintPrefix(kViewDay, id), viewDayKey(id, unixDay(now.Add(-keepViewDay)))},
			{perMintPrefix(kSession, id), key(kSession, id[:], kv.U64(uint64(unixDay(now.Add(-keepViewDay)))))},
		}
		for _, r := range ranges {
			if err := d.deleteRange(ctx, r.prefix, r.before); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteRange deletes keys under prefix that sort before `before`.
func (d *Directory) deleteRange(ctx context.Context, prefix, before []byte) error {
	for ctx.Err() == nil {
		var keys [][]byte
		d.db.View(func(txn *kv.Txn) error {
			it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Rewind(); it.Valid() && len(keys) < 1000; it.Next() {
				k := it.Item().KeyCopy(nil)
				if string(k) >= string(before) {
					break
				}
				keys = append(keys, k)
			}
			return nil
		})
		if len(keys) == 0 {
			return nil
		}
		if err := d.deleteKeys(keys); err != nil {
			return err
		}
	}
	return ctx.Err()
}
