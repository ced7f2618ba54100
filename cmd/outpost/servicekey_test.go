package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The service key is made at the first start and kept; an empty key file,
// as a kill left it between its creation and its write, stopped every
// later start ("must be 64 hex characters"): it holds no key, so one is
// made. One that holds something else is refused.
func TestServiceKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "service.key")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sk, err := serviceKey("", dir)
	if err != nil {
		t.Fatalf("beside an empty key file: %v", err)
	}
	if again, err := serviceKey("", dir); err != nil || again != sk {
		t.Fatalf("the second start: %q, %v; want the key of the first", again, err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != sk {
		t.Fatalf("the file holds %q", b)
	}
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := serviceKey("", dir); err == nil {
		t.Fatal("a damaged key file was taken")
	}
}
