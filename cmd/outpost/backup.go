package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

// backupFiles are the data dir's files a backup carries beside the
// database. The embedded test mint's own state (<data-dir>/faucet/testmint)
// is not one: its sats are play money, and a restored faucet tops up again.
// Nor is the epoch (epoch.go): a restored data dir gets a new one.
var backupFiles = []string{"service.key"}

const backupUsage = `usage: outpost backup FILE [--data-dir DIR]

writes a consistent backup of the data dir to FILE: every Nostr event and
record in the database as of one moment (the ban list, the mint directory,
the faucet's claims and its Cashu wallet) and the service key. It asks the
outpost serving DIR through its admin socket, or reads DIR itself when none
runs. FILE appears only once the backup is whole and checked.
`

const restoreUsage = `usage: outpost restore FILE --data-dir DIR

restores a backup written by "outpost backup" into DIR, which must be empty
or not exist yet. The file is checked whole before anything is written.
`

// backupCLI is "outpost backup FILE".
func backupCLI(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	file, dir, err := parseBackupArgs("backup", backupUsage, args, getenv, stdout)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".partial-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // nothing left once renamed
	how, err := writeBackup(ctx, dir, tmp, stderr)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup of %s: %w", dir, err)
	}
	h, err := kv.VerifyBackup(tmp.Name())
	if err != nil {
		return fmt.Errorf("backup of %s: the file written does not check out: %w", dir, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	syncDir(filepath.Dir(file))
	info, _ := os.Stat(file)
	fmt.Fprintf(stdout, "backup of %s (%s, taken at %s) written to %s: %d bytes\n", dir, how,
		h.CreatedAt.UTC().Format(time.RFC3339), file, info.Size())
	return nil
}

// writeBackup streams the backup from the running outpost, or opens the
// data dir itself when none serves it; how says which.
func writeBackup(ctx context.Context, dir string, w io.Writer, stderr io.Writer) (how string, err error) {
	err = remoteBackup(ctx, dir, w)
	if !errors.Is(err, errNoServer) {
		return "from the running outpost", err
	}
	if _, err := os.Stat(filepath.Join(dir, "badger")); err != nil {
		return "", fmt.Errorf("no outpost database in %s: point --data-dir (or OUTPOST_DATA_DIR) at the data dir outpost serves from", dir)
	}
	st, err := store.Open(dir, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if errors.Is(err, kv.ErrLocked) {
		return "", fmt.Errorf("another outpost holds %s and its admin socket does not answer", dir)
	}
	if err != nil {
		return "", err
	}
	defer st.Close()
	return "from the data dir, outpost not running", st.Backup(w, backupHeader(dir))
}

// restoreCLI is "outpost restore FILE --data-dir DIR".
func restoreCLI(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	file, dir, err := parseBackupArgs("restore", restoreUsage, args, getenv, stdout)
	if err != nil {
		return err
	}
	h, err := kv.Restore(file, dir, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fmt.Errorf("restore %s: %w", file, err)
	}
	fmt.Fprintf(stdout, "restored the backup of %s (outpost %s) into %s\n", h.CreatedAt.UTC().Format(time.RFC3339), h.Version, dir)
	return nil
}

// parseBackupArgs reads FILE and --data-dir (else OUTPOST_DATA_DIR, else ./data).
func parseBackupArgs(cmd, help string, args []string, getenv func(string) string, stdout io.Writer) (file, dir string, err error) {
	fs := newFlagSet(cmd)
	fs.Usage = func() { fmt.Fprint(fs.Output(), help) }
	d := defaultDataDir
	settings.Bind(fs, &d)
	if err := parseFlags(fs, cmd, reorder(args), stdout); err != nil {
		return "", "", err
	}
	if fs.NArg() != 1 {
		return "", "", usageErrorf(cmd, "%s takes one FILE", cmd)
	}
	if _, err := settings.FromEnv(fs, getenv, dataDirTwin); err != nil {
		return "", "", err
	}
	dir, err = filepath.Abs(d.DataDir)
	return fs.Arg(0), dir, err
}

// backupHeader describes a backup of dataDir taken now, with its files.
func backupHeader(dataDir string) kv.BackupHeader {
	h := kv.BackupHeader{CreatedAt: time.Now().UTC(), Version: outpost.Version, Files: map[string][]byte{}}
	for _, name := range backupFiles {
		if b, err := os.ReadFile(filepath.Join(dataDir, name)); err == nil {
			h.Files[name] = b
		}
	}
	return h
}

// backupHandler serves POST /backup on the admin socket: the backup
// streamed as it is written. A failure halfway cuts the stream, which the
// client's check of the trailer refuses. wait waits for backups running.
func backupHandler(st *store.Store, dataDir string, log *slog.Logger) (h http.Handler, wait func()) {
	var running sync.WaitGroup
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Done()
		w.Header().Set("Content-Type", "application/octet-stream")
		start := time.Now()
		err := st.Backup(w, backupHeader(dataDir))
		log.Info("admin: backup", "ok", err == nil, "err", err, "duration", time.Since(start).String())
	}), running.Wait
}

// remoteBackup asks the outpost serving dataDir for a backup; errNoServer
// when none does.
func remoteBackup(ctx context.Context, dataDir string, w io.Writer) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://outpost/backup", nil)
	resp, err := adminClient(dataDir).Do(req)
	if err != nil {
		return errNoServer
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin socket: %s (an outpost older than this command?)", resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// adminClient talks HTTP over the admin socket of dataDir.
func adminClient(dataDir string) *http.Client {
	path := filepath.Join(dataDir, socketName)
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
