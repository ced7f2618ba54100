// Package storetest opens outpost's store for a test that stands on it: in
// the test's temporary directory unless told where, closed when the test
// ends. store's own tests open theirs themselves (this package imports
// store).
package storetest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

// Options say where and how the store is opened.
type Options struct {
	Dir      string       // default: a temporary directory
	Settings kv.Settings  // default: kv.DefaultSettings()
	Log      *slog.Logger // default: discarded
}

// Open opens the store; one that cannot open fails the test.
func Open(t testing.TB, o Options) *store.Store {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Settings == (kv.Settings{}) {
		o.Settings = kv.DefaultSettings()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st, err := store.OpenWith(context.Background(), o.Settings, o.Dir, o.Log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
