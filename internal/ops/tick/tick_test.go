package tick

import (
	"context"
	"testing"
	"time"
)

func TestEveryStopsWhenFnSaysSo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	Every(ctx, time.Millisecond, func() bool { n++; return n < 3 })
	if n != 3 || ctx.Err() != nil {
		t.Fatalf("fn ran %d times (want 3), ctx err %v", n, ctx.Err())
	}
}

func TestEveryStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	Every(ctx, time.Hour, func() bool { ran = true; return true })
	if ran {
		t.Fatal("fn ran after the context ended, before its first tick")
	}
}

func TestNowRunsFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	Now(ctx, time.Hour, func() bool { n++; return true })
	if n != 1 {
		t.Fatalf("fn ran %d times, want once at the start", n)
	}
	n = 0
	Now(context.Background(), time.Millisecond, func() bool { n++; return false })
	if n != 1 {
		t.Fatalf("fn ran %d times after saying stop, want 1", n)
	}
}

// A nil Ticker is a real ticker.
func TestTickers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	real, stopReal := Ticker(nil).Start(time.Millisecond)
	defer stopReal()
	select {
	case <-real:
	case <-ctx.Done():
		t.Fatal("a nil Ticker never ticked")
	}
}
