// Package atomicfile writes small files so that a kill -9 or a power cut
// at any instant leaves either the old file or the whole new one, never an
// empty or partial one that the next start would refuse.
package atomicfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes data to path: to path+".tmp", on disk, then renamed
// over path, the rename made durable too. One writer of a path at a time:
// a fixed temporary name is overwritten by the next write, where a kill
// leaves one behind.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write is WriteFile of what write writes, for a file too large to be
// held in memory whole: the same file is there, old or new, whenever the
// writing stops. A write that fails leaves the old file.
func Write(path string, perm os.FileMode, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // nothing left once renamed
	bw := bufio.NewWriterSize(f, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return Sync(filepath.Dir(path))
}

// Sync writes the file or directory at path to disk: a file created,
// renamed or removed is durable once its directory is synced.
func Sync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
