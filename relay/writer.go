package relay

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
)

// Group commit. Every event accept stores (a client's, another relay's, the
// service's own) goes to one writer, which commits everything waiting in one
// transaction (events.Store.SaveBatch), as strfry's writer does: a commit
// per event spends most of its time committing. Nothing waits to fill a
// batch: a lone event is committed at once, and a batch is what arrived
// while the commit before it ran. Each event is answered only after its
// transaction committed, with its own outcome.
//
// The writer is a goroutine that runs while there is something to write
// and ends when there is not, so the relay has nothing to stop.

// maxBatch bounds the events of one transaction: a batch of contact lists
// (hundreds of index keys each) may still exceed what badger takes at once,
// and then SaveBatch halves it.
const maxBatch = 256

// write is one event waiting for the writer, and then its result.
type write struct {
	ctx     context.Context
	ev      *nostr.Event
	checked bool   // it went through NIP-09's check (not the service's own)
	seen    uint64 // deletions, before that check
	out     events.Outcome
	later   bool // a deletion request was committed after seen, before this
	err     error
	batch   uint64 // its transaction, once committed (see unsent)
	done    chan struct{}
}

// batchStore is what the writer needs of events.Store.
type batchStore interface {
	Save(ctx context.Context, ev *nostr.Event) (events.Outcome, error)
	SaveBatch(ctx context.Context, evs []*nostr.Event) ([]events.Outcome, []error, error)
}

// writer groups the events handed to it into transactions.
type writer struct {
	store    batchStore
	observer Observer
	mu       sync.Mutex
	queue    []*write
	running  bool
	// deletions counts the transactions that stored a deletion request,
	// counted once committed (see Relay.deletedSince).
	deletions atomic.Uint64

	// An event is broadcast by its accept after its transaction committed,
	// so a REQ whose stored events were read in between would send it
	// twice, stored and then live. A REQ therefore goes live only once
	// every transaction whose commit had begun when its stored events were
	// read has been broadcast (awaitBroadcasts).
	bmu     sync.Mutex
	batches uint64         // transactions begun
	unsent  map[uint64]int // transaction → its events not yet broadcast
	sent    chan struct{}  // closed, and replaced, when a transaction is all broadcast
}

// save stores ev through the writer and waits until its transaction
// committed. checked says ev went through NIP-09's check before it came,
// when deletions was seen: then a deletion request ahead of it in the same
// batch refuses it, as that check would have if the request had been
// stored first, and later says whether one was committed in a transaction
// between that check and ev's (Relay.deletedSince looks at those).
//
// A stored event (events.Stored, no error) must be broadcast, and then
// broadcasted called with batch.
func (w *writer) save(ctx context.Context, ev *nostr.Event, checked bool, seen uint64) (out events.Outcome, later bool, batch uint64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, 0, err
	}
	wr := &write{ctx: ctx, ev: ev, checked: checked, seen: seen, done: make(chan struct{})}
	w.mu.Lock()
	w.queue = append(w.queue, wr)
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.run()
	}
	<-wr.done // a commit is bounded by the disk, as Save was
	return wr.out, wr.later, wr.batch, wr.err
}

// run commits batches until the queue is empty.
func (w *writer) run() {
	for {
		batch := w.take()
		if batch == nil {
			return
		}
		before := w.deletions.Load()
		for _, wr := range batch {
			wr.later = wr.seen != before
		}
		b := w.begin(len(batch))
		w.commit(batch)
		w.observer.BatchCommitted(len(batch))
		w.broadcasted(b, len(batch)-w.stored(batch, b))
		if storedDeletion(batch) {
			w.deletions.Add(1)
		}
		for _, wr := range batch {
			close(wr.done)
		}
	}
}

// take removes up to maxBatch writes from the queue; nil (and the writer
// stops) when it is empty.
func (w *writer) take() []*write {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(w.queue), maxBatch)
	if n == 0 {
		w.running = false
		w.queue = nil // let a burst's backing array go
		return nil
	}
	batch := w.queue[:n:n]
	w.queue = w.queue[n:]
	return batch
}

// commit stores a batch in one transaction and sets each write's result.
// A write whose caller gave up is not stored (as Save does not); an event
// a deletion request ahead of it names is refused. When the transaction
// fails as a whole, each event is saved on its own, so that one event the
// store cannot take fails alone.
func (w *writer) commit(batch []*write) {
	var keep []*write
	pending := pendingDeletions{}
	for _, wr := range batch {
		switch {
		case wr.ctx.Err() != nil:
			wr.err = wr.ctx.Err()
		case wr.checked && pending.deletes(wr.ev):
			wr.err = errors.New(refusedDeleted)
		default:
			pending.add(wr.ev)
			keep = append(keep, wr)
		}
	}
	evs := make([]*nostr.Event, len(keep))
	for i, wr := range keep {
		evs[i] = wr.ev
	}
	out, bad, err := w.store.SaveBatch(context.Background(), evs)
	if err != nil && len(keep) > 1 {
		for _, wr := range keep {
			wr.out, wr.err = w.store.Save(context.Background(), wr.ev)
		}
		return
	}
	for i, wr := range keep {
		if err != nil {
			wr.err = err
			continue
		}
		wr.out, wr.err = out[i], bad[i]
	}
}

// begin numbers a transaction of n events about to commit; each counts as
// not yet broadcast until broadcasted says otherwise.
func (w *writer) begin(n int) uint64 {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	if w.unsent == nil {
		w.unsent, w.sent = map[uint64]int{}, make(chan struct{})
	}
	w.batches++
	w.unsent[w.batches] = n
	return w.batches
}

// stored marks the writes of transaction b that stored their event and
// counts them: those its accept broadcasts.
func (w *writer) stored(batch []*write, b uint64) int {
	n := 0
	for _, wr := range batch {
		if wr.err == nil && wr.out == events.Stored {
			wr.batch = b
			n++
		}
	}
	return n
}

// broadcasted says n events of transaction b were broadcast, or will not be.
func (w *writer) broadcasted(b uint64, n int) {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	if w.unsent[b] -= n; w.unsent[b] <= 0 {
		delete(w.unsent, b)
		close(w.sent)
		w.sent = make(chan struct{})
	}
}

// awaitBroadcasts waits until every transaction begun so far has been
// broadcast; false when ctx ends first. Broadcasts meanwhile still reach a
// subscription that is not live yet (its pending events).
func (w *writer) awaitBroadcasts(ctx context.Context) bool {
	w.bmu.Lock()
	hi := w.batches
	for {
		open := false
		for b := range w.unsent {
			open = open || b <= hi
		}
		if !open {
			w.bmu.Unlock()
			return true
		}
		sent := w.sent
		w.bmu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-sent:
		}
		w.bmu.Lock()
	}
}

// storedDeletion reports whether a committed batch stored a deletion request.
func storedDeletion(batch []*write) bool {
	for _, wr := range batch {
		if wr.err == nil && wr.out == events.Stored && wr.ev.Kind == nostr.KindDeletion {
			return true
		}
	}
	return false
}
