package testkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// Ext4 mounts a new ext4 filesystem of sizeMiB mebibytes (an image file in
// the test's temporary directory, on a loop device) on a new temporary
// directory and returns it; it is unmounted when the test ends. A full ext4
// is where outpost's users meet a full disk, and where page faults on a
// shared mapping of a sparse file find no block. Where mkfs.ext4 or a loop
// mount is not available the test is skipped, saying why.
func Ext4(t testing.TB, sizeMiB int) string {
	t.Helper()
	tmp := t.TempDir()
	img, dir := filepath.Join(tmp, "ext4.img"), filepath.Join(tmp, "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, int64(sizeMiB)<<20); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("skipped: this test needs an ext4 filesystem of its own, and mkfs.ext4 failed (%v): %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		t.Skipf("skipped: this test needs an ext4 filesystem of its own, and a loop mount failed (%v; it needs root and loop devices, uid %d): %s", err, os.Geteuid(), out)
	}
	t.Cleanup(func() {
		// The loop device is freed with the last reference (mount sets autoclear).
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// FillFromOutside fills dir's filesystem the way other programs would, as
// fast as a disk can be filled: fallocate takes all but the last MiB at
// once, then dd writes zeros until the filesystem has no block left (both
// may fail with ENOSPC, as expected). It returns the two files' paths
// once dd has exited; removing them frees the space again. Only a fill
// that ends without ENOSPC fails the test.
func FillFromOutside(t testing.TB, dir string) []string {
	t.Helper()
	bulk, rest := filepath.Join(dir, "fallocated"), filepath.Join(dir, "dd-filler")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Error(err)
		return nil
	}
	if n := int64(st.Bfree)*st.Bsize - 1<<20; n > 0 {
		// ext4 counts as free some blocks it keeps back even from root: then
		// fallocate fails with ENOSPC, keeping what it took.
		if out, err := exec.CommandContext(ctx, "fallocate", "-l", fmt.Sprint(n), bulk).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("No space left")) {
			t.Errorf("fallocate in %s: %v: %s", dir, err, out)
		}
	}
	out, err := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of="+rest, "bs=64k").CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("No space left")) {
		t.Errorf("dd filling %s: %v, want ENOSPC: %s", dir, err, out)
	}
	return []string{bulk, rest}
}
