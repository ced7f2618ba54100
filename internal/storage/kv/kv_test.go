package kv

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/testkit"
)

func TestUpdateGivesUpWithAConflictError(t *testing.T) {
	d := openTest(t)
	defer func(n int) { maxAttempts = n }(maxAttempts)
	maxAttempts = 3
	k := []byte{PrefixFaucet, 2}
	attempts := 0
	err := d.Update(func(txn *Txn) error {
		attempts++
		if _, err := txn.Get(k); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		// Another transaction writes what this one read: its commit conflicts.
		if err := d.Update(func(other *Txn) error { return other.Set(k, []byte("x")) }); err != nil {
			return err
		}
		return txn.Set(k, []byte("y"))
	})
	if !testkit.IsKind(err, outpost.Conflict) || outpost.AsError(err).Code != "write_conflict" {
		t.Fatalf("got %v, want a 409 write_conflict", err)
	}
	if attempts != 3 {
		t.Fatalf("%d attempts, want 3", attempts)
	}
	// fn's own errors are returned at once, never retried.
	attempts = 0
	want := errors.New("no")
	if err := d.Update(func(*Txn) error { attempts++; return want }); err != want || attempts != 1 {
		t.Fatalf("got %v after %d attempts, want %v after 1", err, attempts, want)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// AppendValue answers as Get and ValueCopy do, for records in the memtable
// and in tables, overwritten, deleted, written in the same transaction, and
// for keys that are a prefix of another or have one.
func TestAppendValue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := DefaultSettings().Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	k, longer, gone, short := []byte{PrefixFaucet, 1}, []byte{PrefixFaucet, 1, 0}, []byte{PrefixFaucet, 2}, []byte{PrefixFaucet}
	for _, w := range []func(*Txn) error{
		func(txn *Txn) error { return txn.Set(k, []byte("v1")) },
		func(txn *Txn) error { return txn.Set(k, []byte("v2")) },
		func(txn *Txn) error { return txn.Set(longer, []byte("x")) },
		func(txn *Txn) error { return txn.Set(gone, []byte("g")) },
		func(txn *Txn) error { return txn.Delete(gone) },
	} {
		if err := d.Update(w); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{string(k): "v2", string(longer): "x", string(gone): "", string(short): "", string([]byte{PrefixFaucet, 3}): ""}
	check := func(txn *Txn, want map[string]string) {
		t.Helper()
		for key, w := range want {
			got, err := txn.AppendValue([]byte(key), []byte("pre:"))
			item, gerr := txn.Get([]byte(key))
			switch {
			case w == "":
				if !errors.Is(err, ErrNotFound) || !errors.Is(gerr, ErrNotFound) {
					t.Errorf("%x: AppendValue %q, %v; Get %v; want not found", key, got, err, gerr)
				}
			case err != nil || string(got) != "pre:"+w:
				t.Errorf("%x: AppendValue %q, %v; want %q", key, got, err, "pre:"+w)
			case gerr != nil:
				t.Errorf("%x: Get: %v, want %q", key, gerr, w)
			default:
				if v, _ := item.ValueCopy(nil); string(v) != w {
					t.Errorf("%x: Get says %q, want %q", key, v, w)
				}
			}
		}
	}
	if err := d.View(func(txn *Txn) error { check(txn, want); return nil }); err != nil {
		t.Fatal(err)
	}
	// Writes of the transaction itself, not yet committed.
	if err := d.Update(func(txn *Txn) error {
		if err := txn.Set(k, []byte("v3")); err != nil {
			return err
		}
		if err := txn.Delete(longer); err != nil {
			return err
		}
		check(txn, map[string]string{string(k): "v3", string(longer): ""})
		return errors.New("roll back")
	}); err == nil {
		t.Fatal("the update was not rolled back")
	}
	// From tables: closing flushes the memtable.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = DefaultSettings().Open(dir, quiet()); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.View(func(txn *Txn) error { check(txn, want); return nil }); err != nil {
		t.Fatal(err)
	}
}
