package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	c := NewClock(start)
	c.Add(time.Hour)
	if got := c.Now(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("after Add: %v", got)
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set: %v", got)
	}
}

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(t, time.Second, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("%d polls", n)
	}
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitFor(ft, 50*time.Millisecond, "never", func() bool { return false })
	}()
	<-done
	if ft.failed != "timed out after 50ms waiting for never" {
		t.Fatalf("failure: %q", ft.failed)
	}
}

// fakeT records a fatal failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestLogBuffer(t *testing.T) {
	var l LogBuffer
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { fmt.Fprint(&l, "x") })
	}
	wg.Wait()
	if l.String() != "xxxxxxxxxx" {
		t.Fatalf("%q", l.String())
	}
}

func TestTmpfs(t *testing.T) {
	dir := Tmpfs(t, 1, "")
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 2 MiB to a 1 MiB tmpfs: %v, want ENOSPC", err)
	}
	ro := Tmpfs(t, 1, "ro")
	if err := os.WriteFile(filepath.Join(ro, "f"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("writing to a read-only tmpfs: %v, want EROFS", err)
	}
}

func TestExt4FilledFromOutside(t *testing.T) {
	dir := Ext4(t, 32)
	fillers := FillFromOutside(t, dir)
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Bavail != 0 {
		t.Errorf("%d blocks left after dd, want none", st.Bavail)
	}
	for _, f := range fillers {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 1<<20), 0o600); err != nil {
		t.Errorf("writing after the filler was removed: %v", err)
	}
}

// Past returns only once the wall clock is past the instant, in whole
// seconds too: what a test waiting for an expiration relies on.
func TestPast(t *testing.T) {
	at := time.Now().Add(30 * time.Millisecond)
	Past(at)
	if now := time.Now(); !now.After(at) {
		t.Fatalf("Past returned at %v, before %v", now, at)
	}
	sec := time.Unix(time.Now().Unix(), 0)
	Past(sec)
	if time.Now().Unix() < sec.Unix() {
		t.Fatal("Past returned before the second")
	}
	Past(time.Now().Add(-time.Hour)) // already past: returns at once
}

// A Ticker's tick is taken by the loop's receive.
func TestTicker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var m Ticker
	c, stop := m.Start(time.Hour)
	defer stop()
	at := time.Unix(1700000000, 0)
	go m.Tick(ctx, at)
	select {
	case got := <-c:
		if !got.Equal(at) {
			t.Fatalf("ticked %v, want %v", got, at)
		}
	case <-ctx.Done():
		t.Fatal("no tick")
	}
	short, cancelShort := context.WithCancel(ctx)
	cancelShort()
	if err := m.Tick(short, at); err == nil {
		t.Fatal("a tick nobody takes returned no error once its context ended")
	}
}
