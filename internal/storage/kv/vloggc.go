package kv

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/outpost-relay/outpost/internal/ops/tick"
)

// vlogGCEvery is how often collectValueLogs looks for a value log to
// rewrite.
const vlogGCEvery = 10 * time.Minute

// vlogDiscard is the share of a value log that must be garbage for it to
// be rewritten: its live values are written anew, the file is deleted.
const vlogDiscard = 0.5

// collectValueLogs rewrites, every `every`, each value log at least
// vlogDiscard garbage. Only values over badger's threshold (1 MiB) are in
// the value logs: a follower's full pages of its primary's list
// (banlist's maxPage). Each whole list taken anew, or rewritten, deletes
// the pages of the one before, some 34 MB at a million bans, and without
// this they stayed on the disk for good. badger counts a log's garbage as
// its compactions drop the values' keys, so a log is rewritten some time
// after its pages were deleted. Nothing is rewritten while the disk is
// low: a rewrite writes the live values before the file goes.
func (d *DB) collectValueLogs(ctx context.Context, every time.Duration, log *slog.Logger) {
	tick.Every(ctx, every, func() bool {
		for ctx.Err() == nil && (d.gate.space == nil || !d.gate.space.Status().Low) {
			err := d.db.RunValueLogGC(vlogDiscard)
			if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
				break
			}
			if err != nil {
				log.Warn("value log not collected", "err", err)
				break
			}
			log.Info("value log collected: a log at least half garbage was rewritten")
		}
		return true
	})
}
