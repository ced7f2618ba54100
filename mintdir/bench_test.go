package mintdir

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
)

// benchMints caches a directory holding one mint with n checks spread over
// the last 30 days, written through the real write path in batches.
var (
	benchMints   sync.Map // n → *benchMint
	benchCleanup []func()
)

// TestMain closes and removes the benchmarks' shared stores, which outlive
// any one (sub-)benchmark.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard) // eventstore announces its migration through the standard log
	code := m.Run()
	for _, f := range benchCleanup {
		f()
	}
	os.Exit(code)
}

// checkCounts are the sizes of the 30-day query benchmarks, and
// catalogueSize the mints of the probe cycle and catalogue benchmarks; with
// -test.short (go run ./bench -short) they are small enough for seconds.
func checkCounts() []int {
	if testing.Short() {
		return []int{100, 5_000}
	}
	return []int{1_000, 100_000}
}

func catalogueSize() int {
	if testing.Short() {
		return 50
	}
	return 1_000
}

type benchMint struct {
	e *env
	m *Mint
}

func loadChecks(b *testing.B, n int) *benchMint {
	if v, ok := benchMints.Load(n); ok {
		return v.(*benchMint)
	}
	dir, err := os.MkdirTemp("", "mintdir-bench")
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(dir, quiet())
	if err != nil {
		b.Fatal(err)
	}
	benchCleanup = append(benchCleanup, func() { st.Close(); os.RemoveAll(dir) })
	e := newEnvOn(b, st, Config{Settings: Settings{ProbeInterval: 5 * time.Minute}})
	e.ctx = context.Background()
	m := e.mint(e.submit("http://127.0.0.1:1"))
	id := m.ID
	step := 30 * 24 * time.Hour / time.Duration(n)
	start := e.clock.Now()
	const batch = 500
	for i := 0; i < n; i += batch {
		err := e.dir.db.Update(func(txn *kv.Txn) error {
			cur, err := getMint(txn, id)
			if err != nil {
				return err
			}
			for j := i; j < min(i+batch, n); j++ {
				c := Check{At: start.Add(time.Duration(j) * step), OK: j%50 != 0, RTTMs: 80 + j%400}
				if !c.OK {
					c.RTTMs, c.ErrKind = 0, "timeout"
				}
				if err := e.dir.recordTxn(txn, cur, &c, nil, nil, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	e.clock.Set(start.Add(30 * 24 * time.Hour))
	bm := &benchMint{e: e, m: e.mint(m.ID.String())}
	if got := bm.m.ChecksTotal; got != int64(n) {
		b.Fatalf("%d checks stored, want %d", got, n)
	}
	benchMints.Store(n, bm)
	return bm
}

// The cost of a 30-day query must not grow with the number of raw checks:
// both read at most 720 hourly rollups.
func BenchmarkUptime30d(b *testing.B) {
	benchChecks(b, func(bm *benchMint, n int) error {
		u, err := bm.e.dir.Uptime(bm.e.ctx, bm.m, Window30d)
		if err == nil && u.TotalChecks < int64(n)*99/100 {
			err = fmt.Errorf("%d checks in 30 days, want %d", u.TotalChecks, n)
		}
		return err
	})
}

func BenchmarkTimeseries30d(b *testing.B) {
	benchChecks(b, func(bm *benchMint, _ int) error {
		pts, err := bm.e.dir.Timeseries(bm.e.ctx, bm.m, Window30d, time.Hour)
		if err == nil && len(pts) != 721 {
			err = fmt.Errorf("%d points, want 721", len(pts))
		}
		return err
	})
}

// The summary refreshed after every check: uptime over 24 h, 7 and 30 days,
// incidents, reviews and trust.
func BenchmarkRefreshSummary(b *testing.B) {
	benchChecks(b, func(bm *benchMint, _ int) error { return bm.e.dir.refreshSummary(bm.e.ctx, bm.m.ID, true) })
}

// benchChecks runs op on a mint with each of checkCounts' numbers of checks.
func benchChecks(b *testing.B, op func(bm *benchMint, checks int) error) {
	for _, n := range checkCounts() {
		b.Run(fmt.Sprintf("checks=%d", n), func(b *testing.B) {
			bm := loadChecks(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := op(bm, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// loopbackMints serves n mints on loopback: one HTTP server, a path per
// mint (/m/<i>), each with its own pubkey.
func loopbackMints(b *testing.B, n int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/") // /m/<i>/v1/info
		if len(parts) != 5 || parts[1] != "m" {
			http.NotFound(w, r)
			return
		}
		i, _ := strconv.Atoi(parts[2])
		switch parts[4] {
		case "info":
			fmt.Fprintf(w, `{"name":"Mint %d","pubkey":"02%064x","version":"bench/1","description":"d","contact":[{"method":"email","info":"x@y"}],`+
				`"nuts":{"4":{"methods":[{"method":"bolt11","unit":"sat"}],"disabled":false},"5":{"methods":[{"method":"bolt11","unit":"sat"}],"disabled":false},"7":{"supported":true}}}`, i, i)
		case "keysets":
			fmt.Fprint(w, `{"keysets":[{"id":"00aa","unit":"sat","active":true,"input_fee_ppk":0}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

func catalogue(b *testing.B, srv *httptest.Server, n int) *env {
	e := newEnv(b, Config{Settings: Settings{ProbeInterval: 5 * time.Minute, ProbeConcurrency: 16}})
	for i := range n {
		e.submit(fmt.Sprintf("%s/m/%d", srv.URL, i))
	}
	start := time.Now()
	if got := e.dir.ProbeAll(context.Background()); got != n {
		b.Fatalf("first cycle probed %d", got)
	}
	b.Logf("first cycle over %d mints (metadata, keysets and history for each): %v", n, time.Since(start))
	return e
}

// BenchmarkProbeCycle runs full probe cycles over 1,000 loopback mints (50
// with -test.short):
// fetch, parse, record, roll up and summarise every mint, 16 at a time.
func BenchmarkProbeCycle(b *testing.B) {
	mints := catalogueSize()
	e := catalogue(b, loopbackMints(b, mints), mints)
	ctx := context.Background()
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.clock.Add(5 * time.Minute)
		if n := e.dir.ProbeAll(ctx); n != mints {
			b.Fatalf("cycle probed %d", n)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e9, "cpu-s/cycle")
	b.ReportMetric(float64(mints), "mints")
	if n, _ := e.dir.Count(); n != mints {
		b.Fatalf("%d mints after the cycles (some merged?)", n)
	}
}

// BenchmarkFetchCycle is the probe cycle's baseline: the same loopback
// /v1/info documents fetched by plain net/http, 16 at a time and without
// connection reuse, as the prober does, and nothing else.
func BenchmarkFetchCycle(b *testing.B) {
	mints := catalogueSize()
	srv := loopbackMints(b, mints)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		next := make(chan int, mints)
		for i := range mints {
			next <- i
		}
		close(next)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for i := range next {
					resp, err := client.Get(fmt.Sprintf("%s/m/%d/v1/info", srv.URL, i))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e9, "cpu-s/cycle")
	b.ReportMetric(float64(mints), "mints")
}

// The listing and /stats walk the whole catalogue.
func BenchmarkCatalogue(b *testing.B) {
	mints := catalogueSize()
	e := catalogue(b, loopbackMints(b, mints), mints)
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if page, total, err := e.dir.List(e.ctx, ListOptions{Sort: "trust", Limit: 50}); err != nil || total != mints || len(page) != 50 {
				b.Fatal(total, err)
			}
		}
	})
	b.Run("stats-uncached", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			e.clock.Add(statsTTL)
			if s, err := e.dir.Stats(e.ctx); err != nil || s.MintsTotal != mints {
				b.Fatal(s.MintsTotal, err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		m, _, _ := e.dir.List(e.ctx, ListOptions{Limit: 1})
		id := m[0].ID.String()
		b.ReportAllocs()
		for range b.N {
			got, err := e.dir.Get(e.ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			e.dir.CountView(got, "198.51.100.7", "bench")
		}
	})
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
