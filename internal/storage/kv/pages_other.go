//go:build !linux

package kv

// ReleasePages does nothing: reading the process's mappings and
// MADV_PAGEOUT are Linux's.
func (d *DB) ReleasePages() (int64, error) { return 0, nil }

func (d *DB) keepOpened() {}
