package relay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/policies"
)

// heldStore is the real store, with some of the writer's transactions
// held until the test lets them go: what the test hands the writer
// meanwhile waits in its queue, and is then one batch.
type heldStore struct {
	batchStore
	mu    sync.Mutex
	holds map[int]hold // by the number of the SaveBatch call, from 1
	sizes []int        // the events of each SaveBatch
}

type hold struct{ entered, release chan struct{} }

// holdTransactions makes the writer's next transactions numbered n (from 1) wait.
func holdTransactions(r *Relay, n ...int) *heldStore {
	h := &heldStore{batchStore: r.write.store, holds: map[int]hold{}}
	for _, i := range n {
		h.holds[i] = hold{make(chan struct{}), make(chan struct{})}
	}
	r.write.store = h
	return h
}

func (h *heldStore) SaveBatch(ctx context.Context, evs []*nostr.Event) ([]events.Outcome, []error, error) {
	h.mu.Lock()
	h.sizes = append(h.sizes, len(evs))
	hd, held := h.holds[len(h.sizes)]
	h.mu.Unlock()
	if held {
		close(hd.entered)
		<-hd.release
	}
	return h.batchStore.SaveBatch(ctx, evs)
}

// queued waits until the writer's queue holds n writes.
func queued(t *testing.T, r *Relay, n int) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("%d events in the writer's queue", n), func() bool {
		r.write.mu.Lock()
		defer r.write.mu.Unlock()
		return len(r.write.queue) >= n
	})
}

func newTestRelay(t *testing.T) *Relay {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(Config{Store: st, BanList: policies.NewBanList(), Log: log, PublicURL: "http://127.0.0.1:1", Name: "test"})
}

// verdict is what an OK message says.
type verdict struct {
	ok     bool
	reason string
}

// oneByOne ingests evs one after the other, each after the one before it
// was answered.
func oneByOne(r *Relay, evs []*nostr.Event) []verdict {
	v := make([]verdict, len(evs))
	for i, ev := range evs {
		v[i].ok, v[i].reason = r.Ingest(context.Background(), ev)
	}
	return v
}

// inOneBatch ingests evs concurrently, so that the writer commits them in
// one transaction, in this order; it fails the test if it did not.
func inOneBatch(t *testing.T, r *Relay, evs []*nostr.Event) []verdict {
	t.Helper()
	held := holdTransactions(r, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { // takes the writer's first transaction, which holds
		if err := r.Publish(ctx, note(t, nostr.GeneratePrivateKey(), "first", 1)); err != nil {
			t.Error(err)
		}
	})
	wait(t, ctx, held.holds[1].entered)
	v := make([]verdict, len(evs))
	for i, ev := range evs {
		wg.Go(func() { v[i].ok, v[i].reason = r.Ingest(ctx, ev) })
		queued(t, r, i+1) // in order: each is queued before the next goes
	}
	close(held.holds[1].release)
	wg.Wait()
	r.write.store = held.batchStore
	if len(held.sizes) != 2 { // the held one, then evs but those refused before
		t.Fatalf("transactions of %v events, want two", held.sizes)
	}
	return v
}

func wait(t *testing.T, ctx context.Context, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
}

func note(t *testing.T, sk, content string, at nostr.Timestamp, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	return signed(t, sk, 1, content, at, tags...)
}

func signed(t *testing.T, sk string, kind int, content string, at nostr.Timestamp, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, Content: content, CreatedAt: nostr.Now() - 1000 + at, Tags: nostr.Tags(tags)}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// stored is which of evs the store holds.
func stored(t *testing.T, r *Relay, evs []*nostr.Event) []bool {
	t.Helper()
	held := make([]bool, len(evs))
	for i, ev := range evs {
		n, err := r.store.Events.Count(context.Background(), []nostr.Filter{{IDs: []string{ev.ID}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		held[i] = n == 1
	}
	return held
}

// TestBatchEndsAsOneByOne: events committed in one transaction get the
// answers, and leave the store, as if each had come after the one before
// it was answered: two versions of an address, either way round; a
// deletion request and what it names, either way round (by id and by
// address); an event twice; and an event refused among others, which are
// stored.
func TestBatchEndsAsOneByOne(t *testing.T) {
	a, b := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	x := note(t, a, "x", 1)
	old, newer := signed(t, a, 30023, "old", 1, nostr.Tag{"d", "p"}), signed(t, a, 30023, "new", 2, nostr.Tag{"d", "p"})
	byID := signed(t, a, 5, "", 3, nostr.Tag{"e", x.ID})
	byAddr := signed(t, a, 5, "", 3, nostr.Tag{"a", "30023:" + old.PubKey + ":p"})
	other := note(t, b, "y", 1)
	for name, evs := range map[string][]*nostr.Event{
		"older version first":       {old, newer},
		"newer version first":       {newer, old},
		"deletion after its event":  {x, other, byID},
		"deletion before its event": {byID, other, x},
		"address deleted after":     {old, byAddr},
		"address deleted before":    {byAddr, newer, other},
		"the same event twice":      {x, other, x},
	} {
		t.Run(name, func(t *testing.T) {
			one := newTestRelay(t)
			want := oneByOne(one, evs)
			wantStored := stored(t, one, evs)
			r := newTestRelay(t)
			got := inOneBatch(t, r, evs)
			for i := range evs {
				if got[i] != want[i] {
					t.Errorf("event %d: %+v in one batch, %+v one by one", i, got[i], want[i])
				}
			}
			if held := stored(t, r, evs); !slices.Equal(held, wantStored) {
				t.Errorf("stored %v in one batch, %v one by one", held, wantStored)
			}
		})
	}
}

// TestDeletionBetweenCheckAndCommit: an event checked before a deletion
// request naming it was committed, and committed after the request's own
// deletions ran, is refused and not kept, as if it had come after.
func TestDeletionBetweenCheckAndCommit(t *testing.T) {
	r := newTestRelay(t)
	sk := nostr.GeneratePrivateKey()
	x := note(t, sk, "x", 1)
	del := signed(t, sk, 5, "", 2, nostr.Tag{"e", x.ID})
	held := holdTransactions(r, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deleted := make(chan verdict, 1)
	go func() { // the deletion request's transaction holds
		var v verdict
		v.ok, v.reason = r.Ingest(ctx, del)
		deleted <- v
	}()
	wait(t, ctx, held.holds[1].entered)
	var got verdict
	var wg sync.WaitGroup
	wg.Go(func() { got.ok, got.reason = r.Ingest(ctx, x) }) // checked now: nothing deletes it yet
	queued(t, r, 1)
	close(held.holds[1].release)
	wait(t, ctx, held.holds[2].entered) // x's transaction holds
	select {
	case v := <-deleted:
		if !v.ok {
			t.Fatalf("the deletion request: %+v", v)
		}
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	close(held.holds[2].release)
	wg.Wait()
	if want := (verdict{false, refusedDeleted}); got != want {
		t.Errorf("the deleted event: %+v, want %+v", got, want)
	}
	if held := stored(t, r, []*nostr.Event{x}); held[0] {
		t.Error("the deleted event is stored")
	}
}

// batchObserver records the writer's transactions, and how many events
// the test counts had been answered as each was reported.
type batchObserver struct {
	noObserver
	answered *atomic.Int64
	mu       sync.Mutex
	sizes    []int
	before   []int64 // answers given when each transaction was reported
}

func (o *batchObserver) BatchCommitted(events int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sizes = append(o.sizes, events)
	o.before = append(o.before, o.answered.Load())
}

// TestAnsweredAfterItsTransaction: events that arrive while a transaction
// commits are committed together in the next one, which the metrics see
// with its size, and none of them is answered before it committed.
func TestAnsweredAfterItsTransaction(t *testing.T) {
	var answered atomic.Int64
	obs := &batchObserver{answered: &answered}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := New(Config{Store: st, BanList: policies.NewBanList(), Log: log, PublicURL: "http://127.0.0.1:1", Name: "test", Observer: obs})
	held := holdTransactions(r, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const waiting = 20
	var wg sync.WaitGroup
	wg.Go(func() { // takes the first transaction, which holds
		if err := r.Publish(ctx, note(t, nostr.GeneratePrivateKey(), "first", 1)); err != nil {
			t.Error(err)
		}
	})
	wait(t, ctx, held.holds[1].entered)
	for i := range waiting {
		ev := note(t, nostr.GeneratePrivateKey(), fmt.Sprint(i), 1)
		wg.Go(func() {
			if ok, reason := r.Ingest(ctx, ev); !ok {
				t.Errorf("refused: %s", reason)
			}
			answered.Add(1)
		})
	}
	queued(t, r, waiting)
	close(held.holds[1].release)
	wait(t, ctx, held.holds[2].entered) // the twenty, their transaction not yet committed
	if n := answered.Load(); n != 0 {
		t.Errorf("%d events answered before their transaction committed", n)
	}
	close(held.holds[2].release)
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.Equal(obs.sizes, []int{1, waiting}) || !slices.Equal(obs.before, []int64{0, 0}) {
		t.Errorf("transactions of %v events reported, with %v of the %[3]d answered before each; want [1 %[3]d], none answered", obs.sizes, obs.before, waiting)
	}
}
