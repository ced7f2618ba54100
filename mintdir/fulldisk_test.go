package mintdir

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// The disk fills while a mint is being checked (the store took writes when
// the check began): the check is dropped quietly, as one begun on a full
// disk is, rather than returned as an error the prober logs on every round
// while the disk stays full; the store has said once that it is full.
func TestCheckFinishedOnAFullDiskIsDropped(t *testing.T) {
	t.Parallel()
	disk := testkit.NewFullDisk(t)
	st, err := store.OpenWith(context.Background(), kv.Settings{MinFreeSpace: disk.Min}, disk.Dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnvOn(t, st, Config{})
	f := newFakeMint(t, "Filling", pk1)
	id := e.submit(f.URL)
	e.probe(id)

	var fill sync.Once
	f.Misbehave(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/v1/info" {
			fill.Do(func() { disk.FillPastMin(t, func() bool { return !st.DB.Writable() }) })
		}
		return false
	})
	e.clock.Add(time.Minute)
	err = e.dir.Probe(e.ctx, id)
	if st.DB.Writable() {
		t.Fatal("the store never refused writes")
	}
	if err != nil {
		t.Errorf("a check finished as the disk filled: %v, want it dropped quietly", err)
	}
	if m := e.mint(id); m.ChecksTotal != 1 {
		t.Errorf("%d checks recorded, want the first only", m.ChecksTotal)
	}
}
