package ecash_test

import (
	"context"
	"testing"
)

// BenchmarkSend: a token payout (one swap, written before and after) per
// operation, at each mint; sequential, and four at once (Nutshell's SQLite
// times out its locks beyond a few concurrent swaps).
func BenchmarkSend(b *testing.B) {
	for _, m := range mints(b) {
		for _, par := range []int{1, 2} {
			b.Run(m.name+map[int]string{1: "", 2: "/parallel"}[par], func(b *testing.B) {
				e := open(b, m.url, "").w
				fund(b, m, e, 2_000_000)
				ctx := context.Background()
				b.SetParallelism(par)
				b.ResetTimer()
				if par == 1 {
					for range b.N {
						if _, err := e.Send(ctx, "", 10, 0); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := e.Send(ctx, "", 10, 0); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
