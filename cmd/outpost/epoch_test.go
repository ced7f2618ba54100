package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A data dir keeps its epoch across starts; a new data dir, or one whose
// epoch file was torn, gets a new one.
func TestDataEpoch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1, err := dataEpoch(dir)
	if err != nil || !validEpoch(e1) {
		t.Fatalf("%q %v", e1, err)
	}
	if again, err := dataEpoch(dir); again != e1 || err != nil {
		t.Fatalf("the second start got %q (%v), want %q", again, err, e1)
	}
	if other, _ := dataEpoch(t.TempDir()); other == e1 {
		t.Fatal("two data dirs share an epoch")
	}
	if err := os.WriteFile(filepath.Join(dir, epochFile), []byte("0c65"), 0o600); err != nil {
		t.Fatal(err)
	}
	if torn, err := dataEpoch(dir); err != nil || !validEpoch(torn) || torn == e1 {
		t.Fatalf("a torn epoch file gave %q (%v)", torn, err)
	}
}
