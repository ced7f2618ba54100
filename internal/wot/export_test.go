package wot

// SetBounds sets w's bounds to sizes a test can reach.
func SetBounds(w *WoT, follows, keys, compactFloor int) {
	w.apply.Lock()
	defer w.apply.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bounds = bounds{follows: follows, keys: keys, compactFloor: compactFloor}
}
