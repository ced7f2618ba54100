package publish

import "time"

// SetNow gives the outbox a clock (before Run): a refused event is due
// again by it.
func (o *Outbox) SetNow(now func() time.Time) { o.now = now }

// Wake has the outbox look at once at what is due for every relay, as a
// timer running out would: for a test that moved the clock.
func (o *Outbox) Wake() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.relays {
		o.poke(r)
	}
}
