package ratelimit

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := New(10, time.Minute, func() time.Time { return now })
	for i := range 10 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("request %d of a burst of 10 refused", i+1)
		}
	}
	ok, wait := l.Allow("a")
	if ok || wait != 6*time.Second {
		t.Fatalf("11th request: ok=%v wait=%v, want refused with 6s", ok, wait)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Fatal("another key was limited")
	}
	now = now.Add(6 * time.Second)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("refused after waiting Retry-After")
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("a second request after one interval was allowed")
	}
	now = now.Add(time.Minute)
	for i := range 10 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("after a full period, request %d refused", i+1)
		}
	}
	if got := l.Refused(); got != 2 {
		t.Fatalf("Refused() = %d, want 2", got)
	}
}

func TestNilLimiterAllows(t *testing.T) {
	l := New(0, time.Minute, nil)
	if l != nil {
		t.Fatal("n=0 should disable limiting")
	}
	if ok, _ := l.Allow("x"); !ok {
		t.Fatal("nil limiter refused")
	}
	if l.Refused() != 0 {
		t.Fatal("a nil limiter counts refusals")
	}
}
