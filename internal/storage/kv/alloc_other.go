//go:build !linux

package kv

import (
	"errors"
	"os"
)

// errNoAllocate: allocating blocks ahead of writes is done on Linux only.
var errNoAllocate = errors.New("allocating files ahead (fallocate) is done on Linux only")

func allocate(path string, size int64) error { return errNoAllocate }

func allocateAhead(f *os.File, size int64) error { return errNoAllocate }

func allocateFile(f *os.File, size int64) error { return errNoAllocate }
