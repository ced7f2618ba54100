package devmint

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/elnosh/gonuts/mint/storage/sqlite"
	"github.com/outpost-relay/outpost/internal/ops/atomicfile"
)

// The mint's database is gonuts' sqlite file in the mint's directory,
// migrated by golang-migrate as gonuts opens it (sqlite.InitSQLite). Each
// migration is marked "dirty" before it runs and clean after, in separate
// transactions; a kill -9 in between leaves the database dirty, and
// golang-migrate then refuses it at every later start ("Dirty database
// version 5. Fix and force version."). A fresh mint runs all eight
// migrations as it starts, so a kill in a first start's first second
// bricked the data dir. So gonuts never migrates the database in place:
// prepareDB migrates a new one (or a copy of an old one) beside it and
// renames it into place, whole, and gonuts finds it up to date.

// dbName is gonuts' database file in the mint's directory (InitSQLite).
const dbName = "mint.sqlite.db"

// stagingDir is where a database is migrated before it is moved to dbName;
// what is in it is never the mint's, and is removed at every start.
const stagingDir = "mint.sqlite.staging"

// schemaVersion is the last of gonuts v0.4.2's migrations (in its
// mint/storage/sqlite/migrations); TestSchemaVersion fails when a new
// gonuts adds one.
const schemaVersion = 8

// dbState is what prepareDB reads of a database.
type dbState struct {
	missing bool // no file: a new mint
	version int  // golang-migrate's version; -1: none recorded
	dirty   bool // a migration started and was not recorded done
	seeded  bool // it holds the mint's seed, the first thing gonuts writes after migrating
}

// prepareDB leaves in dir a database that gonuts opens without migrating:
// none there, or one holding nothing (a mint killed while it set up, by an
// outpost before this one), is made new; one a version behind is migrated
// as a copy. It refuses, with a message, a database it cannot read or one
// holding the mint's keys that was left half-migrated: those it never
// deletes.
func prepareDB(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, stagingDir)); err != nil {
		return err
	}
	live := filepath.Join(dir, dbName)
	st, err := readDBState(live)
	switch {
	case err != nil:
		return fmt.Errorf("the mint's database %s cannot be read (%w); it may hold the mint's keys and the records of its ecash: "+
			"restore it from a backup, or move it away to start a new mint, whose URL stays but whose earlier ecash is then worthless", live, err)
	case st.missing:
		return stageDB(dir, "")
	case !st.dirty && st.version >= schemaVersion:
		return nil
	case !st.seeded:
		if err := removeDB(live); err != nil {
			return err
		}
		return stageDB(dir, "")
	case !st.dirty && st.version >= 0:
		return stageDB(dir, live)
	}
	why := "was left half-migrated"
	if !st.dirty {
		why = "records no schema version"
	}
	return fmt.Errorf("the mint's database %s holds the mint's keys but %s (version %d): "+
		"restore it from a backup; its keys sign the ecash wallets hold", live, why, st.version)
}

// readDBState reads the state of the database at path, if there is one.
// Opening it also rolls back a transaction a kill left unfinished.
func readDBState(path string) (dbState, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return dbState{missing: true}, nil
	} else if err != nil {
		return dbState{}, err
	}
	db, err := sql.Open("sqlite3", path) // as gonuts opens it
	if err != nil {
		return dbState{}, err
	}
	defer db.Close()
	st := dbState{version: -1}
	tables := map[string]bool{}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('schema_migrations', 'seed')`)
	if err != nil {
		return dbState{}, err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return dbState{}, err
		}
		tables[name] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return dbState{}, err
	}
	if tables["schema_migrations"] {
		err := db.QueryRow(`SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&st.version, &st.dirty)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return dbState{}, err
		}
	}
	if tables["seed"] {
		if err := db.QueryRow(`SELECT EXISTS (SELECT 1 FROM seed)`).Scan(&st.seeded); err != nil {
			return dbState{}, err
		}
	}
	return st, nil
}

// stageDB makes the database in stagingDir, from a copy of the one at from
// if there is one, migrates it, and renames it to dbName: a kill at any
// instant leaves either the database as it was or the migrated one.
func stageDB(dir, from string) error {
	tmp := filepath.Join(dir, stagingDir)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, dbName)
	if from != "" {
		if err := copyFile(from, staged); err != nil {
			return err
		}
	}
	db, err := sqlite.InitSQLite(tmp)
	if err != nil {
		return fmt.Errorf("migrate the mint's database: %w", err)
	}
	db.Close()
	if err := atomicfile.Sync(staged); err != nil {
		return err
	}
	if err := os.Rename(staged, filepath.Join(dir, dbName)); err != nil {
		return err
	}
	return atomicfile.Sync(dir)
}

// removeDB removes a database that holds nothing, with sqlite's files
// beside it.
func removeDB(path string) error {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// copyFile copies the file at from to a new file at to, on disk.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	return errors.Join(err, dst.Close())
}
