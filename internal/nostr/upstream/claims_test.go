package upstream

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Ids one peer's session is fetching are left to it by another, which
// waits until they are given back (fetched, or not: its peer went away),
// then may claim them itself.
func TestClaims(t *testing.T) {
	t.Parallel()
	c := claims{m: map[string]chan struct{}{}}
	mine, theirs := c.take([]string{"a", "b"})
	if !slices.Equal(mine, []string{"a", "b"}) || len(theirs) != 0 {
		t.Fatalf("first take: %v %v", mine, theirs)
	}
	mine, theirs = c.take([]string{"b", "c"})
	if !slices.Equal(mine, []string{"c"}) || !slices.Equal(theirs, []string{"b"}) {
		t.Fatalf("second take: %v %v", mine, theirs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.wait(ctx, theirs); err == nil {
		t.Fatal("wait returned while b was claimed")
	}
	waited := make(chan error, 1)
	go func() { waited <- c.wait(context.Background(), theirs) }()
	c.give([]string{"a", "b"})
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("wait did not return once b was given back")
	}
	if mine, _ := c.take(theirs); !slices.Equal(mine, []string{"b"}) {
		t.Fatalf("b given back, then taken: %v", mine)
	}
}
