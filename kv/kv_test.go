package kv

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/outpost-relay/outpost"
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
	if !outpost.IsKind(err, outpost.Conflict) || outpost.AsError(err).Code != "write_conflict" {
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
