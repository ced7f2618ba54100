package kv

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A backup file is
//
//	"outpost-backup 1\n"
//	a JSON BackupHeader on one line (with the small files kept beside the database)
//	badger's backup stream: every key and value of the database as of one
//	  read timestamp (a consistent snapshot), so events, records and the
//	  faucet's wallet (PrefixWallet) together
//	a trailer: the stream's length (8 bytes, little endian), the SHA-256
//	  of everything before the trailer, and "OUTPOST!"
//
// The trailer makes a cut-off or damaged file fail before anything is
// restored: badger's stream alone ends at any record boundary without
// saying that records are missing.
const (
	backupMagic   = "outpost-backup 1\n"
	trailerMagic  = "OUTPOST!"
	trailerLength = 8 + sha256.Size + len(trailerMagic)
)

// BackupHeader describes a backup.
type BackupHeader struct {
	CreatedAt time.Time         `json:"created_at"`
	Version   string            `json:"version"` // outpost's, when it was written
	Files     map[string][]byte `json:"files"`   // data-dir files restored beside the database, by name
}

// ErrBadBackup is returned for a file that is not a whole outpost backup.
var ErrBadBackup = errors.New("not a complete outpost backup (cut off, damaged, or another kind of file)")

// Backup writes a backup of the database to w; it may run while the
// database serves, and holds every write committed before it started.
func (d *DB) Backup(w io.Writer, h BackupHeader) error {
	sum := sha256.New()
	out := io.MultiWriter(w, sum)
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(out, backupMagic); err != nil {
		return err
	}
	if _, err := out.Write(append(head, '\n')); err != nil {
		return err
	}
	counted := &countingWriter{w: out}
	if _, err := d.db.Backup(counted, 0); err != nil {
		return fmt.Errorf("backup stream: %w", err)
	}
	trailer := binary.LittleEndian.AppendUint64(nil, uint64(counted.n))
	trailer = append(sum.Sum(trailer), trailerMagic...)
	_, err = w.Write(trailer)
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// VerifyBackup checks that the file at path is a whole backup and returns
// its header.
func VerifyBackup(path string) (BackupHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return BackupHeader{}, err
	}
	defer f.Close()
	h, _, err := readBackup(f)
	return h, err
}

// readBackup checks f's trailer and checksum and reads its header; the
// returned reader yields the badger stream.
func readBackup(f *os.File) (BackupHeader, io.Reader, error) {
	var h BackupHeader
	info, err := f.Stat()
	if err != nil {
		return h, nil, err
	}
	size := info.Size()
	if size < int64(len(backupMagic)+trailerLength) {
		return h, nil, ErrBadBackup
	}
	trailer := make([]byte, trailerLength)
	if _, err := f.ReadAt(trailer, size-int64(trailerLength)); err != nil {
		return h, nil, err
	}
	if string(trailer[8+sha256.Size:]) != trailerMagic {
		return h, nil, ErrBadBackup
	}
	streamLen := int64(binary.LittleEndian.Uint64(trailer[:8]))
	body := io.NewSectionReader(f, 0, size-int64(trailerLength))
	sum := sha256.New()
	if _, err := io.Copy(sum, body); err != nil {
		return h, nil, err
	}
	if !bytes.Equal(sum.Sum(nil), trailer[8:8+sha256.Size]) {
		return h, nil, ErrBadBackup
	}
	br := bufio.NewReader(io.NewSectionReader(f, 0, size-int64(trailerLength)))
	magic := make([]byte, len(backupMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != backupMagic {
		return h, nil, ErrBadBackup
	}
	line, err := br.ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &h) != nil {
		return h, nil, ErrBadBackup
	}
	headLen := int64(len(backupMagic) + len(line))
	if headLen+streamLen != size-int64(trailerLength) {
		return h, nil, ErrBadBackup
	}
	return h, io.NewSectionReader(f, headLen, streamLen), nil
}

// Restore loads the backup at path into a new database in dataDir, which
// must be empty or not exist yet, and writes the header's files beside it.
// On any error what it wrote is removed again.
func Restore(path, dataDir string, log *slog.Logger) (h BackupHeader, err error) {
	if err := requireEmpty(dataDir); err != nil {
		return h, err
	}
	f, err := os.Open(path)
	if err != nil {
		return h, err
	}
	defer f.Close()
	h, stream, err := readBackup(f)
	if err != nil {
		return h, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return h, err
	}
	defer func() {
		if err != nil {
			clearDir(dataDir)
		}
	}()
	for name, content := range h.Files {
		if name != filepath.Base(name) || name == "." || name == ".." || name == "badger" {
			return h, fmt.Errorf("%w: a file named %q", ErrBadBackup, name)
		}
		if err := os.WriteFile(filepath.Join(dataDir, name), content, 0o600); err != nil {
			return h, err
		}
	}
	db, err := badger.Open(DefaultSettings().badgerOptions(filepath.Join(dataDir, "badger"), log))
	if err != nil {
		return h, err
	}
	if err := db.Load(stream, 256); err != nil {
		db.Close()
		return h, fmt.Errorf("load the backup: %w", err)
	}
	return h, db.Close()
}

// requireEmpty refuses a data dir that holds anything: a restore must never
// mix with or overwrite data.
func requireEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty: restore only into a new or empty data dir", dir)
	}
	return nil
}

// clearDir removes what a failed restore wrote into dir.
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
