package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of sizeMiB mebibytes (with mount options opts, e.g.
// "ro", besides the size) on a new temporary directory and returns the
// directory; it is unmounted when the test ends. A test of a small or
// read-only filesystem needs one; where mounting is not allowed (not root,
// or a container without CAP_SYS_ADMIN) the test is skipped, saying why.
func Tmpfs(t testing.TB, sizeMiB int, opts string) string {
	t.Helper()
	dir := t.TempDir()
	data := fmt.Sprintf("size=%dm,mode=0700", sizeMiB)
	if opts != "" {
		data += "," + opts
	}
	flags := uintptr(0)
	if opts == "ro" {
		flags = syscall.MS_RDONLY
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, data); err != nil {
		t.Skipf("skipped: this test needs a small filesystem of its own, and mounting a tmpfs failed (%v; it needs root or CAP_SYS_ADMIN, uid %d)", err, os.Geteuid())
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file into dir (on a filesystem of the test's own, see
// Tmpfs) that leaves about leave bytes free, replacing the one an earlier
// Fill wrote, and returns its path: removing it frees the space again. A
// failure is reported with t.Error, so a server's handler may call it too.
func Fill(t testing.TB, dir string, leave int64) string {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	os.Remove(filler)
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Error(err)
		return filler
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if err := os.WriteFile(filler, make([]byte, max(0, free-leave)), 0o600); err != nil {
		t.Error(err)
	}
	return filler
}
