package testkit

import (
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// FullDisk is the filesystem of a test of a full disk: a tmpfs of the
// test's own (Tmpfs) big enough for badger's two 32 MiB memtable logs and
// some writes, and the free space below which the store under test is to
// refuse writes (its MinFreeSpace).
type FullDisk struct {
	Dir string
	Min settings.Bytes
}

// NewFullDisk mounts a 128 MiB tmpfs for a store to be given Min (32 MiB)
// as its minimum free space.
func NewFullDisk(t testing.TB) FullDisk {
	t.Helper()
	return FullDisk{Dir: Tmpfs(t, 128, ""), Min: 32 << 20}
}

// FillPastMin fills the disk to 4 MiB below the minimum and waits (5 s at
// most) until refused says the store under test noticed; the test checks
// what it needs of the store afterwards, so a server's handler may call it
// too. It returns the filler's path: removing it frees the space again.
func (d FullDisk) FillPastMin(t testing.TB, refused func() bool) string {
	t.Helper()
	filler := Fill(t, d.Dir, int64(d.Min)-4<<20)
	for deadline := time.Now().Add(5 * time.Second); !refused() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // a poll: the store's notice has no signal a test can wait on
	}
	return filler
}
