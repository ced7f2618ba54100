// Package atomicfile writes small files so that a kill -9 or a power cut
// at any instant leaves either the old file or the whole new one, never an
// empty or partial one that the next start would refuse.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile writes data to path: to a new file beside it, on disk, then
// renamed over path, the rename made durable too.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // nothing left once renamed
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return Sync(dir)
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
