package nostrclient_test

import (
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// Waits are drawn from the upper half of a span doubling from Min to Max.
func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Unix(1e9, 0))
	for _, tt := range []struct {
		name string
		rand func(int64) int64
		want []time.Duration
	}{
		{"lowest", func(int64) int64 { return 0 }, []time.Duration{500, 1000, 2000, 4000, 4000}},
		{"highest", func(n int64) int64 { return n - 1 }, []time.Duration{1000, 2000, 4000, 8000, 8000}},
	} {
		b := nostrclient.Backoff{Min: time.Second, Max: 8 * time.Second, Now: clock.Now, Rand: tt.rand}
		for i, want := range tt.want {
			b.Start()
			got := b.Next()
			if want *= time.Millisecond; tt.name == "highest" {
				want -= time.Nanosecond
			}
			if got != want {
				t.Errorf("%s: wait %d is %v, want %v", tt.name, i, got, want)
			}
		}
	}
	b := nostrclient.Backoff{Min: time.Second, Max: 4 * time.Second, Now: clock.Now}
	span := time.Second
	for i := range 100 {
		if got := b.Next(); got < span/2 || got >= span {
			t.Fatalf("wait %d is %v, outside [%v, %v)", i, got, span/2, span)
		}
		span = min(2*span, 4*time.Second)
	}
	// A Max below the default Min is the longest wait from the first.
	b = nostrclient.Backoff{Max: 200 * time.Millisecond, Now: clock.Now}
	for i := range 10 {
		if got := b.Next(); got < 100*time.Millisecond || got >= 200*time.Millisecond {
			t.Fatalf("wait %d under a 200ms Max is %v", i, got)
		}
	}
}

// The span is back to Min after an attempt that stayed up Healthy, or that
// the caller calls healthy; not after a shorter one.
func TestBackoffReset(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Unix(1e9, 0))
	b := nostrclient.Backoff{Min: time.Second, Max: time.Hour, Healthy: time.Minute, Now: clock.Now,
		Rand: func(int64) int64 { return 0 }}
	fail := func(up time.Duration) time.Duration {
		b.Start()
		clock.Add(up)
		return b.Next()
	}
	for _, step := range []struct {
		up, want time.Duration
	}{
		{0, 500 * time.Millisecond},
		{59 * time.Second, time.Second},
		{time.Second, 2 * time.Second},
		{time.Minute, 500 * time.Millisecond},
		{0, time.Second},
	} {
		if got := fail(step.up); got != step.want {
			t.Fatalf("after %v up: %v, want %v", step.up, got, step.want)
		}
	}
	b.Reset()
	if got := fail(0); got != 500*time.Millisecond {
		t.Fatalf("after Reset: %v", got)
	}
}
