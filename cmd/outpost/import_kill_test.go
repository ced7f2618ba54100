package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestImportStoppedThenRunAgain runs outpost import as a process of its
// own, stops it partway — SIGTERM, then SIGKILL — and runs it again on the
// whole file: each data dir ends holding exactly what one whole import
// stores, as outpost export writes it.
func TestImportStoppedThenRunAgain(t *testing.T) {
	t.Parallel()
	file, _ := writeMixed(t, t.TempDir(), 3000, false)
	data, _ := os.ReadFile(file)
	whole := t.TempDir()
	if _, stderr, err := imp(t, map[string]string{"OUTPOST_DATA_DIR": whole}, "import", file); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := exportAll(t, whole)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		dir := t.TempDir()
		cmd := exec.Command(outpostBinary(t), "import", "--batch", "20", "--data-dir", dir)
		var stderr testkit.LogBuffer
		cmd.Stderr = &stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A pipe holds 64 KiB: once this returns, the import has read
		// most of the first 2,000 lines, and waits for more.
		if _, err := in.Write(data[:nthLine(data, 2000)]); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if sig == syscall.SIGTERM && (err != nil || !strings.Contains(stderr.String(), "interrupted after line")) {
				t.Fatalf("SIGTERM: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v: the import did not end\n%s", sig, stderr.String())
		}
		in.Close()
		if _, out, err := imp(t, map[string]string{"OUTPOST_DATA_DIR": dir}, "import", file); err != nil {
			t.Fatalf("after %v: %v\n%s", sig, err, out)
		}
		if got := exportAll(t, dir); got != want {
			t.Errorf("after %v and a second run: %d bytes exported, %d from one whole import", sig, len(got), len(want))
		}
	}
}

// exportAll is outpost export of the data dir, the events of the mix's
// authors (outpost's own, made when a data dir is created, differ).
func exportAll(t *testing.T, dir string, env ...map[string]string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, []string{"export", "--data-dir", dir, "--kinds", "0,1,3,5,7,30023"}, func(k string) string {
		if len(env) > 0 {
			return env[0][k]
		}
		return ""
	}, nil, &out, &errOut); err != nil {
		t.Fatalf("export: %v\n%s", err, errOut.String())
	}
	return out.String()
}
