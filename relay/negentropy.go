package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
	"github.com/tidwall/gjson"
)

// NIP-77 negentropy reconciliation, with go-nostr's negentropy package. Each
// session holds the (created_at, id) of every event its filter matches, so
// their number and size are bounded.
const (
	maxNegSessions = 2           // open reconciliations per connection
	maxNegEvents   = 200_000     // events one reconciliation may cover
	negFrameLimit  = 64 << 10    // bytes of one NEG-MSG payload (hex doubles it)
	negIdle        = time.Minute // an idle session is forgotten
)

type negSession struct {
	mu   sync.Mutex // a client may send the next NEG-MSG before the last answer
	neg  *negentropy.Negentropy
	used time.Time
}

// negError is ["NEG-ERR", <sub id>, <reason>]. (go-nostr's ErrorEnvelope
// writes "NEG-ERROR", which clients do not recognise.)
func negError(id, reason string) frame { return labelled("NEG-ERR", id, reason) }

// onNegOpen handles ["NEG-OPEN", <sub id>, <filter>, <initial message>].
func (c *conn) onNegOpen(ctx context.Context, m message) {
	id, reason := m.subID()
	if reason != "" {
		c.refuse(m, reason, negError)
		return
	}
	if len(m) != 4 || m[3].Type != gjson.String {
		c.send(negError(id, `invalid: NEG-OPEN is ["NEG-OPEN", <sub id>, <filter>, <message>]`))
		return
	}
	filters, reason := message{m[0], m[1], m[2]}.filters(1)
	if reason != "" {
		c.send(negError(id, reason))
		return
	}
	c.closeNeg(id) // a NEG-OPEN with an open session's id replaces it
	if !c.roomForNeg() {
		c.send(negError(id, fmt.Sprintf("blocked: %d reconciliations are open, at most %d allowed", maxNegSessions, maxNegSessions)))
		return
	}
	f := filters[0]
	f.Limit, f.LimitZero = 0, false
	vec := vector.New()
	n := 0
	if !matchesNothing(f) {
		err := c.r.events.Query(ctx, f, c.r.hiddenAt(time.Now().Unix()), func(m Meta, _ []byte) bool {
			if n++; n > maxNegEvents {
				return false
			}
			vec.Insert(m.CreatedAt, m.IDHex())
			return true
		})
		if err != nil {
			if ctx.Err() == nil {
				c.r.log.Warn("relay: reading events for NIP-77", "err", err)
				c.send(negError(id, "error: could not read stored events"))
			}
			return
		}
	}
	if n > maxNegEvents {
		c.send(negError(id, fmt.Sprintf("blocked: the filter matches more than %d events; narrow it", maxNegEvents)))
		return
	}
	vec.Seal()
	s := &negSession{neg: negentropy.New(vec, negFrameLimit), used: time.Now()}
	out, err := s.neg.Reconcile(m[3].Str)
	if err != nil {
		c.send(negError(id, "invalid: "+err.Error()))
		return
	}
	c.mu.Lock()
	c.negs[id] = s
	c.mu.Unlock()
	c.send(labelled("NEG-MSG", id, out))
}

// onNegMsg handles ["NEG-MSG", <sub id>, <message>].
func (c *conn) onNegMsg(m message) {
	id, reason := m.subID()
	if reason != "" {
		c.refuse(m, reason, negError)
		return
	}
	c.mu.Lock()
	s := c.negs[id]
	c.mu.Unlock()
	if s == nil {
		c.send(negError(id, "closed: no open reconciliation with this id"))
		return
	}
	if len(m) != 3 || m[2].Type != gjson.String {
		c.closeNeg(id)
		c.send(negError(id, `invalid: NEG-MSG is ["NEG-MSG", <sub id>, <message>]`))
		return
	}
	s.mu.Lock()
	out, err := s.neg.Reconcile(m[2].Str)
	s.used = time.Now()
	s.mu.Unlock()
	if err != nil {
		c.closeNeg(id)
		c.send(negError(id, "invalid: "+err.Error()))
		return
	}
	c.send(labelled("NEG-MSG", id, out))
}

// onNegClose handles ["NEG-CLOSE", <sub id>]; it has no answer.
func (c *conn) onNegClose(m message) {
	if id, reason := m.subID(); reason == "" {
		c.closeNeg(id)
	}
}

func (c *conn) closeNeg(id string) {
	c.mu.Lock()
	delete(c.negs, id)
	c.mu.Unlock()
}

// roomForNeg forgets idle sessions and reports whether another may open.
func (c *conn) roomForNeg() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.negs {
		s.mu.Lock()
		idle := time.Since(s.used) > negIdle
		s.mu.Unlock()
		if idle {
			delete(c.negs, id)
		}
	}
	return len(c.negs) < maxNegSessions
}
