//go:build !linux

package kv

// ReleasePages does nothing: reading the process's mappings and
// MADV_PAGEOUT are Linux's.
func (d *DB) ReleasePages() (int64, error) { return 0, nil }

func (d *DB) keepOpened() {}

// ReleaseValueLogs does nothing, as ReleasePages.
func (d *DB) ReleaseValueLogs() error { return nil }
