package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// startStrfry runs the real strfry (../shared/tools/strfry next to the
// module, or $OUTPOST_STRFRY_DIR) on 127.0.0.1 and returns its address; the
// test is skipped without it.
func startStrfry(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OUTPOST_STRFRY_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "tools", "strfry") // from relay/, the module's ../shared
	}
	tmpl, err := os.ReadFile(filepath.Join(dir, "strfry.conf.tmpl"))
	if err != nil {
		testkit.Missing(t, "strfry", fmt.Errorf("no strfry at %s (set OUTPOST_STRFRY_DIR): %w", dir, err))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	data := t.TempDir()
	conf := strings.NewReplacer("@DB@", data+"/db/", "@PORT@", addr[strings.LastIndex(addr, ":")+1:], "@PLUGIN@", "").Replace(string(tmpl))
	if err := os.Mkdir(filepath.Join(data, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "strfry.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, "strfry"), "--config="+filepath.Join(data, "strfry.conf"), "relay")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("strfry does not start (run %s/install): %v", dir, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var d net.Dialer
		if c, err := d.DialContext(ctx, "tcp", addr); err == nil {
			c.Close()
			return addr
		}
		select {
		case <-exited:
			t.Skipf("strfry stopped (run %s/install): %s", dir, out.String())
		case <-ctx.Done():
			t.Fatalf("strfry did not listen on %s: %s", addr, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The same publishes of versions of replaceable and addressable events get
// the same OK from outpost's relay as from strfry: accepted or not, with
// the same prefix ("replaced:" for an older version, "duplicate:" for the
// held one again), the tie of one second going to the lowest id in both.
func TestReplaceableLikeStrfry(t *testing.T) {
	t.Parallel()
	addr := startStrfry(t)
	e := newEnv(t)
	ours, theirs := dialWire(t, e.url, 0), dialWire(t, "http://"+addr, 0)
	sk, _ := newKey()
	at := nostr.Now() - 100
	for _, tags := range []nostr.Tags{nil, {{"d", "friends"}}} {
		kind := 0
		if tags != nil {
			kind = 30000
		}
		version := func(dt nostr.Timestamp, content string) nostr.Event {
			return signAt(t, sk, at+dt, kind, content, tags...)
		}
		v1, v2 := version(0, "v1"), version(1, "v2")
		var lower, higher nostr.Event
		for i := 0; lower.ID == "" || higher.ID == ""; i++ {
			if ev := version(1, fmt.Sprint("tie ", i)); ev.ID < v2.ID {
				lower = ev
			} else {
				higher = ev
			}
		}
		for i, ev := range []nostr.Event{v1, version(-1, "older"), v1, v2, v1, higher, lower, v2} {
			ok, reason := ours.publish(ev)
			sok, sreason := theirs.publish(ev)
			prefix, _, _ := strings.Cut(reason, ":")
			sprefix, _, _ := strings.Cut(sreason, ":")
			if ok != sok || prefix != sprefix {
				t.Errorf("kind %d, step %d (%s): outpost %v %q, strfry %v %q", kind, i, ev.Content, ok, reason, sok, sreason)
			}
		}
	}
}
