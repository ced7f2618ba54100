package wot

import (
	"context"
	"encoding/json"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
)

// importBatch is how many contact lists ImportStored applies at once.
const importBatch = 1_000

// ImportStored takes in the contact lists already in the relay's event
// store, which the store checked when it took them: for a first start, or
// one after outpost ran without a web of trust. It returns how many it read.
func (w *WoT) ImportStored(ctx context.Context, st *events.Store) (int, error) {
	var batch []List
	n := 0
	var ferr error
	err := st.Query(ctx, nostr.Filter{Kinds: []int{nostr.KindFollowList}}, nil, func(_ events.Meta, raw []byte) bool {
		var ev nostr.Event
		if json.Unmarshal(raw, &ev) != nil {
			return true // not ours to judge here: the relay stored it
		}
		l, ok := w.list(&ev)
		if !ok {
			return true
		}
		batch, n = append(batch, l), n+1
		if len(batch) == importBatch {
			ferr, batch = w.SetLists(batch), batch[:0]
		}
		return ferr == nil
	})
	if err == nil {
		err = ferr
	}
	if err == nil && len(batch) > 0 {
		err = w.SetLists(batch)
	}
	return n, err
}
