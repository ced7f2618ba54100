package wot

import "context"

// ImportStored takes in, from the relay's event store, the contact lists the
// walk needs: for a first start, or one after outpost ran without a web of
// trust. From now on lists not held are read from there too. It returns
// how many lists it took.
func (w *WoT) ImportStored(ctx context.Context, st Events) (int, error) {
	w.apply.Lock()
	defer w.apply.Unlock()
	w.mu.Lock()
	w.events = st
	clear(w.missing) // look again, there
	before := w.lists()
	w.mu.Unlock()
	if err := w.settle(ctx, nil, false); err != nil {
		return 0, err
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.lists() - before, nil
}
