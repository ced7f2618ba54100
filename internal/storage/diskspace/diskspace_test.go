package diskspace

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/outpost-relay/outpost/internal/testkit"
)

const MiB = 1 << 20

// fakeDisk is a filesystem whose free space the test sets; it counts statfs calls.
type fakeDisk struct {
	free  atomic.Int64
	calls atomic.Int64
	err   atomic.Bool
}

func (d *fakeDisk) statfs(string) (int64, error) {
	d.calls.Add(1)
	if d.err.Load() {
		return 0, errors.New("stat failed")
	}
	return d.free.Load(), nil
}

func watch(t *testing.T, free, min int64) (*Watcher, *fakeDisk, *testkit.LogBuffer) {
	t.Helper()
	disk := &fakeDisk{}
	disk.free.Store(free)
	logs := &testkit.LogBuffer{}
	w := &Watcher{dir: "/data", min: min, log: slog.New(slog.NewTextHandler(logs, nil)), free: disk.statfs}
	w.set(free)
	return w, disk, logs
}

func TestWritesStopBelowTheMinimumAndResume(t *testing.T) {
	w, disk, logs := watch(t, 100*MiB, 16*MiB)
	if !w.Allow(1000) {
		t.Fatal("refused with plenty of space")
	}
	disk.free.Store(15 * MiB)
	w.Check()
	w.Check()
	if w.Allow(1) || !w.Status().Low || w.Status().Free != 15*MiB {
		t.Fatalf("allowed below the minimum: %+v", w.Status())
	}
	// Just above the minimum is not enough to resume: writes would stop again at once.
	disk.free.Store(17 * MiB)
	w.Check()
	if w.Allow(1) {
		t.Fatal("resumed without room to spare")
	}
	disk.free.Store(40 * MiB)
	w.Check()
	w.Check()
	if !w.Allow(1) || w.Status().Low {
		t.Fatalf("did not resume: %+v", w.Status())
	}
	if n := strings.Count(logs.String(), "disk space low"); n != 1 {
		t.Errorf("logged low space %d times, want once:\n%s", n, logs)
	}
	if n := strings.Count(logs.String(), "disk space recovered"); n != 1 {
		t.Errorf("logged the recovery %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "OUTPOST_MIN_FREE_SPACE") {
		t.Errorf("the warning does not name the setting:\n%s", logs)
	}
}

// Allow makes no system call while the writes fit in the budget, and checks
// early once they may have used it up.
func TestAllowChecksOnlyWhenTheBudgetIsSpent(t *testing.T) {
	w, disk, _ := watch(t, 16*MiB+4*MiB, 16*MiB) // budget: a quarter of 4 MiB
	for range 1000 {
		w.Allow(1000) // 1 MB in all
	}
	if n := disk.calls.Load(); n != 0 {
		t.Fatalf("%d statfs calls for writes within the budget", n)
	}
	disk.free.Store(15 * MiB) // something else filled the disk
	for range 100 {
		w.Allow(1000)
	}
	if disk.calls.Load() == 0 || !w.Status().Low {
		t.Fatalf("spent budget, %d checks, status %+v", disk.calls.Load(), w.Status())
	}
}

func TestAFailedCheckKeepsTheState(t *testing.T) {
	w, disk, logs := watch(t, 100*MiB, 16*MiB)
	disk.err.Store(true)
	w.Check()
	w.Check()
	if !w.Allow(1) {
		t.Fatal("a failed statfs refused writes")
	}
	if n := strings.Count(logs.String(), "cannot measure"); n != 1 {
		t.Errorf("logged %d times", n)
	}
}

func TestOff(t *testing.T) {
	w, disk, _ := watch(t, 0, 0)
	if !w.Allow(1<<40) || !w.Check() || disk.calls.Load() != 0 {
		t.Fatal("a watcher with no minimum refused or measured")
	}
}

func TestFree(t *testing.T) {
	free, err := Free(t.TempDir())
	if err != nil || free <= 0 {
		t.Fatalf("Free = %d, %v", free, err)
	}
	if _, err := Free("/no/such/dir"); err == nil {
		t.Fatal("no error for a missing dir")
	}
}

// A directory deleted, or deleted and made again, under the watcher stops
// writes for good, whether or not free space is watched, and says so once.
func TestRemovedDirStopsWrites(t *testing.T) {
	for _, c := range []struct {
		name     string
		min      int64
		recreate bool
	}{{"deleted", 1 << 20, false}, {"deleted, space not watched", 0, false}, {"made again", 1 << 20, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "badger")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			logs := &testkit.LogBuffer{}
			w, err := New(dir, c.min, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if !w.Check() || !w.Allow(1) {
				t.Fatal("refused before the dir was removed")
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if c.recreate {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			first, second := w.Check(), w.Check() // the second must not log again
			if first || second || w.Allow(1) || !w.Status().Gone {
				t.Fatalf("writes allowed after the dir was removed: %+v", w.Status())
			}
			if n := strings.Count(logs.String(), "deleted or replaced"); n != 1 {
				t.Errorf("logged %d times, want once:\n%s", n, logs)
			}
		})
	}
}
