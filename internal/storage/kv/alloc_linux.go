package kv

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// errNoAllocate: the filesystem cannot allocate blocks ahead of writes.
var errNoAllocate = errors.New("the filesystem does not support fallocate")

// allocate gives every page of the first size bytes of the file at path a
// block, keeping its contents and its size, so that writes to a shared
// mapping of them never need one.
func allocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return fallocate(f, 0, size)
}

// allocateAhead gives f, which is empty, size bytes of blocks past its end
// without changing its size: whoever extends it with ftruncate later finds
// them allocated.
func allocateAhead(f *os.File, size int64) error {
	return fallocate(f, unix.FALLOC_FL_KEEP_SIZE, size)
}

// allocateFile gives f size bytes of allocated blocks, growing it to size.
func allocateFile(f *os.File, size int64) error { return fallocate(f, 0, size) }

func fallocate(f *os.File, mode uint32, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), mode, 0, size)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EOPNOTSUPP || err == unix.ENOSYS:
			return fmt.Errorf("%w: %s: %v", errNoAllocate, f.Name(), err)
		case err != nil:
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
		return nil
	}
}
