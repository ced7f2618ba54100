package main

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/outpost-relay/outpost/banlist"
)

// epochFile holds the data dir's epoch (banlist.Config.Epoch). It is not
// one of backupFiles, on purpose: a data dir restored from a backup gets a
// new epoch, as a new or wiped one does, so that a follower can tell a node
// restored from its primary's backup (same service key) from the primary.
const epochFile = "epoch"

// dataEpoch returns the epoch kept in dataDir, making one when there is
// none. A file that does not hold one (torn by a crash while it was first
// written) is replaced: a new epoch costs followers one whole fetch.
func dataEpoch(dataDir string) (string, error) {
	path := filepath.Join(dataDir, epochFile)
	b, err := os.ReadFile(path)
	if e := strings.TrimSpace(string(b)); err == nil && validEpoch(e) {
		return e, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	e := banlist.NewEpoch()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(e+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	syncDir(dataDir)
	return e, nil
}

func validEpoch(e string) bool {
	_, err := hex.DecodeString(e)
	return len(e) == 32 && err == nil
}
