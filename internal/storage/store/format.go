package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Format is the data dir's format this version reads and writes, the one of
// outpost's first release: badger in <data dir>/badger, holding the event
// store in its format 3 (see package events) and the services' records, the
// faucet's wallet among them. Data dirs of development builds before it
// (events in eventstore v0.17.8's layout or the event store's formats 1 and
// 2, the faucet's gonuts wallet in faucet/wallet/wallet.db) are not upgraded
// in place: their data moves by export and import.
const Format = "outpost 0.1 (event store format 3)"

// ErrOtherFormat: the data dir was written in a format this version does
// not read; the error wrapping it says what was found and what to do.
var ErrOtherFormat = errors.New("data dir of another format")

// gonutsWallet is where development builds before the faucet's own wallet
// kept their gonuts wallet.
var gonutsWallet = filepath.Join("faucet", "wallet", "wallet.db")

// refuseGonutsWallet refuses a data dir holding a gonuts wallet.
func refuseGonutsWallet(dataDir string) error {
	_, err := os.Stat(filepath.Join(dataDir, gonutsWallet))
	switch {
	case err == nil:
		return otherFormat(dataDir, "a gonuts wallet ("+gonutsWallet+")")
	case errors.Is(err, os.ErrNotExist):
		return nil
	}
	return err
}

// otherFormat is ErrOtherFormat for dataDir, saying what it holds (found)
// and what to do.
func otherFormat(dataDir, found string) error {
	return fmt.Errorf("%w: %s holds %s. This outpost reads only the format of its first release, %s: "+
		"export the data with the outpost that wrote it (outpost export), then import it into a new, empty data dir "+
		"with this one (outpost import). The data in %s is left as it was",
		ErrOtherFormat, dataDir, found, Format, dataDir)
}
