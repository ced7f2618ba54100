//go:build !linux

package testkit

import "testing"

// Tmpfs skips the test: mounting a small filesystem is done on Linux only.
func Tmpfs(t testing.TB, sizeMiB int, opts string) string {
	t.Helper()
	t.Skip("skipped: this test mounts a small tmpfs, which it only does on Linux")
	return ""
}

// Fill is never reached: Tmpfs skipped the test.
func Fill(t testing.TB, dir string, leave int64) string {
	t.Helper()
	t.Skip("skipped: filling a filesystem of the test's own is done on Linux only")
	return ""
}

// Ext4 skips the test: mounting an ext4 image is done on Linux only.
func Ext4(t testing.TB, sizeMiB int) string {
	t.Helper()
	t.Skip("skipped: this test mounts an ext4 image, which it only does on Linux")
	return ""
}

// FillFromOutside is never reached: Ext4 or Tmpfs skipped the test.
func FillFromOutside(t testing.TB, dir string) []string {
	t.Helper()
	t.Skip("skipped: filling a filesystem of the test's own is done on Linux only")
	return nil
}
