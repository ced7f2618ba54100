package upstream

// Syncs is how many catch-ups of the first relay have completed.
func Syncs(s *Syncer) int64 {
	r := s.relays[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncs
}
