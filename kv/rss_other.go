//go:build !linux

package kv

import "errors"

// statm and unmapTables are Linux's: boundRSS does not run elsewhere.
type statm struct{}

func openStatm() (*statm, error) {
	return nil, errors.New("outpost reads its resident memory from Linux's /proc")
}

func (s *statm) Close() error                           { return nil }
func (s *statm) resident() (rss, file int64, err error) { return 0, 0, nil }

type blockEnds map[uint64]int64

func (d *DB) unmapTables(blockEnds, func() bool) error { return nil }
