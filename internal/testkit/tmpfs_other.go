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
