package devmint

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/mint/storage/sqlite"
	"github.com/elnosh/gonuts/wallet"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// gonuts' own migrations end at schemaVersion, clean.
func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sqlite.InitSQLite(dir)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err := readDBState(filepath.Join(dir, dbName))
	if err != nil {
		t.Fatal(err)
	}
	if st.version != schemaVersion || st.dirty || st.seeded {
		t.Fatalf("a new gonuts database is at %+v; set schemaVersion to gonuts' last migration", st)
	}
}

// migratedDB makes gonuts' database in dir, as a mint's first start does
// before it writes anything, and runs sql on it.
func migratedDB(t *testing.T, dir string, sql string) {
	t.Helper()
	db, err := sqlite.InitSQLite(dir)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	execDB(t, dir, sql)
}

func execDB(t *testing.T, dir, query string) {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(dir, dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatal(err)
	}
}

// fund starts the mint in dir, funds a new wallet with 100 sats there and
// closes the mint.
func fund(t *testing.T, dir string) (*wallet.Wallet, string) {
	t.Helper()
	m, err := Start(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w, err := wallet.LoadWallet(wallet.Config{WalletPath: t.TempDir(), CurrentMintURL: m.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Shutdown() })
	q, err := w.RequestMint(100, m.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Node.PayInvoice(q.Request); err != nil {
		t.Fatal(err)
	}
	// The mint learns of the payment through its invoice subscription.
	testkit.WaitFor(t, 10*time.Second, "the paid quote's ecash", func() bool {
		_, err := w.MintTokens(q.Quote)
		return err == nil
	})
	return w, m.URL
}

// spend checks that the mint in dir, started again, takes the ecash w
// holds from before: its keys are the same.
func spend(t *testing.T, dir string, w *wallet.Wallet, url string) {
	t.Helper()
	m, err := Start(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.URL != url {
		t.Fatalf("the mint moved from %s to %s", url, m.URL)
	}
	proofs, err := w.Send(40, url, true)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := cashu.NewTokenV4(proofs, url, cashu.Sat, false)
	w2, err := wallet.LoadWallet(wallet.Config{WalletPath: t.TempDir(), CurrentMintURL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Shutdown()
	if n, err := w2.Receive(tok, false); err != nil || n != 40 {
		t.Fatalf("ecash minted before: received %d, %v", n, err)
	}
}

// A kill -9 during a first start left the database half-migrated, before
// gonuts wrote the mint's seed: the data dir could never start again
// ("Dirty database version 5. Fix and force version."). It holds nothing,
// so it is made anew, and the mint works.
func TestStartAfterKilledMigration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	migratedDB(t, dir, `UPDATE schema_migrations SET version = 5, dirty = 1`)
	w, url := fund(t, dir)
	spend(t, dir, w, url)
	if _, err := os.Stat(filepath.Join(dir, stagingDir)); err == nil {
		t.Error("the staging directory was left behind")
	}
}

// A half-migrated database that holds the mint's keys is refused, and left
// as it was.
func TestDirtyDatabaseWithKeysIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	migratedDB(t, dir, `INSERT INTO seed (id, seed) VALUES ('id', 'ab'); UPDATE schema_migrations SET version = 5, dirty = 1`)
	refused(t, dir, "half-migrated")
}

// A file that is no sqlite database is refused, and left as it was.
func TestUnreadableDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, dbName), bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, "cannot be read")
}

func refused(t *testing.T, dir, want string) {
	t.Helper()
	path := filepath.Join(dir, dbName)
	before, _ := os.ReadFile(path)
	if m, err := Start(Options{Dir: dir}); err == nil {
		m.Close()
		t.Fatal("started")
	} else if !strings.Contains(err.Error(), want) {
		t.Fatalf("refused with %q, want it to say %q", err, want)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the database was changed")
	}
}

// A database a migration behind (as a newer gonuts would find one) is
// migrated as a copy, moved into place: the mint keeps its keys.
func TestDatabaseBehindIsMigrated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, url := fund(t, dir)
	// Migration 8 undone, by its own down migration.
	execDB(t, dir, `ALTER TABLE melt_quotes DROP COLUMN is_mpp; ALTER TABLE melt_quotes DROP COLUMN amount_msat;
		UPDATE schema_migrations SET version = 7, dirty = 0`)
	spend(t, dir, w, url)
	if st, err := readDBState(filepath.Join(dir, dbName)); err != nil || st.version != schemaVersion || st.dirty || !st.seeded {
		t.Fatalf("after the start: %+v, %v", st, err)
	}
}

// A kill between the creation of the port file and its write, by a version
// that wrote it in place, left it empty: the mint takes a port and keeps
// it.
func TestEmptyPortFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	portFile := filepath.Join(dir, "port")
	if err := os.WriteFile(portFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w, url := fund(t, dir)
	if b, _ := os.ReadFile(portFile); !strings.HasSuffix(url, ":"+strings.TrimSpace(string(b))) {
		t.Fatalf("the port file says %q, the mint is at %s", b, url)
	}
	spend(t, dir, w, url)
}

// A database holding the mint's keys but no migration version is refused,
// and left as it was.
func TestDatabaseWithoutVersionIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	migratedDB(t, dir, `INSERT INTO seed (id, seed) VALUES ('id', 'ab'); DROP TABLE schema_migrations`)
	refused(t, dir, "no schema version")
}
