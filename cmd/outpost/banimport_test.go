package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// importKeys are n valid public keys (x coordinates on the curve), cheap
// to make by the ten thousand.
func importKeys(n int) []string {
	var out []string
	for i := 1; len(out) < n; i++ {
		if k, err := pubkey.Parse(fmt.Sprintf("%064x", i)); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// TestBanImport: "ban import" loads a file of bare keys (npub or hex) and
// JSON bans in batches, with a stopped server; the server then enforces
// them all. A bad line stops the import before its batch, naming the line.
func TestBanImport(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	cli := cliOn(dir)
	keys := importKeys(25_000)
	var b strings.Builder
	b.WriteString("# a spam wave\n")
	for i, k := range keys {
		switch i % 3 {
		case 0:
			fmt.Fprintln(&b, k)
		case 1:
			fmt.Fprintln(&b, pubkey.NPub(k))
		default:
			fmt.Fprintf(&b, `{"pubkey":%q,"reason":"flood","duration":3600}`+"\n", k)
		}
	}
	file := filepath.Join(t.TempDir(), "wave.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cli("ban", "import", file, "--reason", "wave")
	if err != nil || !strings.Contains(out, "banned 25000 keys in 3 batches") {
		t.Fatalf("import: %v %q", err, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte(keys[0]+"\n\nnot-a-key\n"), 0o600)
	if _, err := cli("ban", "import", bad, "--reason", "x"); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a bad line: %v", err)
	}

	inst := start(t, dir, nil)
	_, h := call(t, "GET", inst.url+"/banlist/health", nil)
	if n := h["checks"].(map[string]any)["active_bans"]; n != float64(len(keys)) {
		t.Errorf("active_bans = %v, want %d", n, len(keys))
	}
	for _, k := range []string{keys[0], keys[1], keys[2]} {
		if _, st := call(t, "GET", inst.url+"/banlist/blocked/pubkeys/"+k, nil); st["blocked"] != true {
			t.Errorf("%s not banned: %v", k, st)
		}
	}
	// With the server running, the import runs in it, reading the file
	// the caller named (relative to the caller).
	more := filepath.Join(dir, "..", "more.txt")
	os.WriteFile(more, []byte(importKeys(25_001)[25_000]+"\n"), 0o600)
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, more) // not t.Chdir, which a parallel test may not
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("no relative path to %s: %q %v", more, rel, err)
	}
	out, err = cli("ban", "import", rel, "--reason", "late")
	if err != nil || !strings.Contains(out, "banned 1 keys") {
		t.Fatalf("import through the server: %v %q", err, out)
	}
}
