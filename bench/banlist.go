package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// 14. The ban list at spam-wave scale (issue 52): one outpost loaded
// through the bulk endpoint to each size in turn, and at each size what
// its readers see: a follower outpost and the strfry plugin started
// against it, from nothing. Every call runs under the bench's HTTP client
// timeout or a context deadline.

// banBench is the primary under measurement and the keys it has banned.
type banBench struct {
	b      *bench
	srv    *server
	dir    string
	keys   *keyGen
	banned []string  // every key banned, in the order they were
	wrote  time.Time // when the last ban was made
	prof   *profiler // with -cpuprofile: the primary's profiles (see profile)
	runs   int       // of the primary, to name its logs
}

const banAdminKey = "bench-admin-key-0123456789abcdef"

// banOptions choose what of the scenario runs (-banlist-*): a run of the
// primary alone at one size takes minutes where the whole takes most of
// an hour.
type banOptions struct {
	sizes     []int // nil: banlistSizes
	noReaders bool  // without the follower and the strfry plugin at each size
	noBurst   bool
}

func parseBanOptions(sizes string, readers, burst bool) (banOptions, error) {
	o := banOptions{noReaders: !readers, noBurst: !burst}
	for f := range strings.SplitSeq(sizes, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n < 0 || (len(o.sizes) > 0 && n < o.sizes[len(o.sizes)-1]) {
			return o, fmt.Errorf("-banlist-sizes: %q is not a list of sizes in increasing order", sizes)
		}
		o.sizes = append(o.sizes, n)
	}
	return o, nil
}

// banlistSizes are the list sizes measured, in order; each is loaded on
// top of the one before.
func banlistSizes(b *bench) []int {
	switch {
	case b.ban.sizes != nil:
		return b.ban.sizes
	case b.smoke:
		return []int{0, 2_000}
	}
	return []int{0, 100_000, 1_000_000}
}

// burstSize is the spam wave of target 5: bans, over how long.
func burstSize(smoke bool) (int, time.Duration) {
	if smoke {
		return 1_000, 2 * time.Second
	}
	return 100_000, time.Minute
}

func banlistScenario(b *bench) ([]row, error) {
	bb := &banBench{b: b, dir: filepath.Join(b.tmp, "banlist-primary"), keys: newKeyGen(52)}
	if err := os.MkdirAll(bb.dir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if bb.prof, err = newProfiler(b.profileDir != ""); err != nil {
		return nil, err
	}
	if err := bb.start(); err != nil {
		return nil, err
	}
	defer func() { bb.stop() }()
	var rows []row
	sizes := banlistSizes(b)
	for i, n := range sizes {
		step(fmt.Sprintf("ban list at %s bans", thousands(n)))
		rs, err := bb.atSize(n)
		if err != nil {
			return nil, fmt.Errorf("at %d bans: %w", n, err)
		}
		rows = append(rows, rs...)
		if i == len(sizes)/2 && !b.ban.noBurst {
			rs, err := bb.burst()
			if err != nil {
				return nil, fmt.Errorf("burst: %w", err)
			}
			rows = append(rows, rs...)
		}
	}
	return rows, nil
}

func (bb *banBench) start() error {
	env := append(outpostEnv(bb.dir), append(limitsLifted, "OUTPOST_ADMIN_API_KEY="+banAdminKey)...)
	if bb.prof != nil {
		env = append(append(env, bb.prof.env()...), "GODEBUG=gctrace=1")
	}
	srv, err := startServer(bb.b.outpost, nil, env...)
	bb.srv = srv
	return err
}

// stop stops the primary; with -cpuprofile its stderr (gctrace's lines
// among them) is kept beside the profiles.
func (bb *banBench) stop() {
	bb.srv.stop()
	if bb.prof != nil {
		bb.runs++
		os.WriteFile(filepath.Join(bb.b.profileDir, fmt.Sprintf("banlist-primary-%d.log", bb.runs)), bb.srv.logs.Bytes(), 0o644)
	}
}

// profile keeps a CPU profile of the primary's next d as name (with
// -cpuprofile; else it does nothing), and returns a wait for it.
func (bb *banBench) profile(name string, d time.Duration) func() {
	if bb.prof == nil {
		return func() {}
	}
	done := bb.prof.after(nil, 0, d, filepath.Join(bb.b.profileDir, "banlist-"+name+".pprof"))
	return func() {
		if err := <-done; err != nil {
			step("profile " + name + ": " + err.Error())
		}
	}
}

// heap keeps a profile of the primary's heap as name (with -cpuprofile).
func (bb *banBench) heap(name string) {
	if bb.prof == nil {
		return
	}
	body, _, err := fetch("http://" + bb.prof.addr + "/debug/pprof/heap?gc=1")
	if err == nil {
		err = os.WriteFile(filepath.Join(bb.b.profileDir, "banlist-heap-"+name+".pprof"), body, 0o644)
	}
	if err != nil {
		step("heap profile " + name + ": " + err.Error())
	}
}

// atSize loads the list up to n bans and measures everything at that size.
func (bb *banBench) atSize(n int) ([]row, error) {
	label := func(s string) string { return fmt.Sprintf("%s bans: %s", thousands(n), s) }
	var rows []row
	if add := n - len(bb.banned); add > 0 {
		took, err := bb.load(add, fmt.Sprintf("load-%d", n))
		if err != nil {
			return nil, err
		}
		bb.heap(fmt.Sprintf("loaded-%d", n))
		rate := float64(add) / took.Seconds()
		rows = append(rows, row{measure: label("load through POST /admin/bans (batches of 10,000, 2 at a time)"),
			value: fmt.Sprintf("%s (%.0f bans/s)", took.Round(time.Millisecond), rate), target: "≥ 20,000 bans/s", holds: ptr(rate >= 20_000)})
	}
	measures := []func(n int, label func(string) string) ([]row, error){bb.restart, bb.reads, bb.publishIdle, bb.follower, bb.plugin, bb.pages}
	if bb.b.ban.noReaders {
		measures = []func(n int, label func(string) string) ([]row, error){bb.restart, bb.reads, bb.publishIdle, bb.pages}
	}
	for _, m := range measures {
		rs, err := m(n, label)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rs...)
		for _, r := range rs {
			step(r.measure + ": " + r.value) // as it comes, so a run cut short still says it
		}
	}
	bb.heap(fmt.Sprintf("read-%d", n))
	m := bb.srv.mem()
	rows = append(rows, row{measure: label("memory after every read (anonymous / total RSS / peak)"),
		value: fmt.Sprintf("%s / %s / %s", mb(m.Anon), mb(m.RSS), mb(m.Peak)), target: "anonymous ≤ 256 MiB", holds: ptr(m.Anon <= 256<<20)})
	return rows, nil
}

// keyGen makes valid public keys (x coordinates on the curve) from a seed.
type keyGen struct{ r *rand.Rand }

func newKeyGen(seed uint64) *keyGen { return &keyGen{rand.New(rand.NewPCG(seed, 52))} }

func (g *keyGen) next() string {
	var b [32]byte
	for {
		for i := range 4 {
			binary.LittleEndian.PutUint64(b[8*i:], g.r.Uint64())
		}
		if k, err := pubkey.Parse(hex.EncodeToString(b[:])); err == nil {
			return k
		}
	}
}

// load bans add new keys in batches of 10,000, two requests at a time (the
// server writes one batch at a time; the other is read and checked meanwhile).
func (bb *banBench) load(add int, name string) (time.Duration, error) {
	var bodies [][]byte
	for lo := 0; lo < add; lo += 10_000 {
		var body bytes.Buffer
		for range min(10_000, add-lo) {
			k := bb.keys.next()
			bb.banned = append(bb.banned, k)
			fmt.Fprintf(&body, `{"pubkey":%q,"reason":"spam wave"}`+"\n", k)
		}
		bodies = append(bodies, body.Bytes())
	}
	profiled := bb.profile(name, 30*time.Second)
	defer profiled()
	start := time.Now()
	err := inParallel(2, len(bodies), func(i int) error { return bb.post(bodies[i]) })
	return time.Since(start), err
}

// inParallel runs fn(0..n-1) on workers goroutines; the first error wins.
func inParallel(workers, n int, fn func(i int) error) error {
	var mu sync.Mutex
	var first error
	next := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// post sends one NDJSON batch of bans.
func (bb *banBench) post(body []byte) error {
	req, _ := http.NewRequest("POST", bb.srv.url+"/banlist/admin/bans", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+banAdminKey)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	bb.wrote = time.Now()
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST /admin/bans: %d %s", resp.StatusCode, b)
	}
	return nil
}

// banNew bans k fresh keys at once and returns them.
func (bb *banBench) banNew(k int) ([]string, error) {
	body, keys := bb.newBans(k)
	if err := bb.post(body); err != nil {
		return nil, err
	}
	bb.banned = append(bb.banned, keys...)
	return keys, nil
}

// newBans makes k new keys and the NDJSON body that bans them.
func (bb *banBench) newBans(k int) (body []byte, keys []string) {
	var b bytes.Buffer
	keys = make([]string, k)
	for i := range keys {
		keys[i] = bb.keys.next()
		fmt.Fprintf(&b, `{"pubkey":%q,"reason":"spam wave"}`+"\n", keys[i])
	}
	return b.Bytes(), keys
}

// restart stops the primary and times its start on the loaded data dir,
// until /health answers 200.
func (bb *banBench) restart(n int, label func(string) string) ([]row, error) {
	bb.stop()
	if bb.prof != nil { // the start, from once its pprof listens
		done := bb.prof.after(nil, 300*time.Millisecond, 20*time.Second, filepath.Join(bb.b.profileDir, fmt.Sprintf("banlist-start-%d.pprof", n)))
		defer func() {
			if err := <-done; err != nil {
				step("profile of the start: " + err.Error())
			}
		}()
	}
	start := time.Now()
	if err := bb.start(); err != nil {
		return nil, err
	}
	if err := waitFor(time.Minute, func() bool { return status(bb.srv.url+"/health") == 200 }); err != nil {
		return nil, err
	}
	took := time.Since(start)
	return []row{{measure: label("start (process start to /health 200)"), value: took.Round(time.Millisecond).String()}}, nil
}

func status(u string) int {
	resp, err := httpClient.Get(u)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond every 20 ms until it holds, for at most d.
func waitFor(d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done within %s", d)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// reads measures health, the whole list in pages and as a stream, and a
// delta of 100 bans.
func (bb *banBench) reads(n int, label func(string) string) ([]row, error) {
	h, bh := timeGets(bb.srv.url+"/health", 21), timeGets(bb.srv.url+"/banlist/health", 21)
	worst := max(h, bh)
	rows := []row{{measure: label("/health and /banlist/health, p50 of 21 each"), value: fmt.Sprintf("%s, %s", msText(millis(h)), msText(millis(bh))),
		target: "≤ 10 ms", holds: ptr(worst <= 10*time.Millisecond)}}
	// A delta reaches 5 s back before its cursor (changesSlack, so that no
	// change is missed): the first page's cursor must be later than that
	// after the last load, or the delta counts part of the load too.
	time.Sleep(time.Until(bb.wrote.Add(6 * time.Second)))
	start := time.Now()
	count, cursor, err := bb.pageAll()
	if err != nil {
		return nil, err
	}
	paged := time.Since(start)
	start = time.Now()
	streamed, size, err := bb.stream()
	if err != nil {
		return nil, err
	}
	rows = append(rows,
		row{measure: label("whole list in pages of 10,000"), value: fmt.Sprintf("%s (%s keys)", paged.Round(time.Millisecond), thousands(count))},
		row{measure: label("whole list as one NDJSON stream"), value: fmt.Sprintf("%s (%s keys, %s)", time.Since(start).Round(time.Millisecond), thousands(streamed), mb(size))})
	if count != len(bb.banned) || streamed != len(bb.banned) {
		return nil, fmt.Errorf("%d keys paged and %d streamed of %d banned", count, streamed, len(bb.banned))
	}
	if _, err := bb.banNew(100); err != nil {
		return nil, err
	}
	delta, _, err := fetch(bb.srv.url + "/banlist/blocked/pubkeys?since=" + url.QueryEscape(cursor))
	if err != nil {
		return nil, err
	}
	return append(rows, row{measure: label("delta of 100 new bans (?since= the first page's cursor)"), value: fmt.Sprintf("%.1f KB", float64(len(delta))/1000)}), nil
}

// timeGets is the median time of n GETs of u.
func timeGets(u string, n int) time.Duration {
	ts := make([]time.Duration, n)
	for i := range ts {
		t0 := time.Now()
		status(u)
		ts[i] = time.Since(t0)
	}
	slices.Sort(ts)
	return ts[n/2]
}

type listPage struct {
	PubKeys []json.RawMessage `json:"pubkeys"`
	Next    *string           `json:"next"`
	Cursor  string            `json:"cursor"`
}

// pageAll reads the whole list in pages; it returns the keys and the first
// page's cursor.
func (bb *banBench) pageAll() (count int, cursor string, err error) {
	after := ""
	for {
		body, _, err := fetch(bb.srv.url + "/banlist/blocked/pubkeys?limit=10000&after=" + after)
		if err != nil {
			return 0, "", err
		}
		var p listPage
		if err := json.Unmarshal(body, &p); err != nil {
			return 0, "", fmt.Errorf("page after %q: %v: %.200s", after, err, body)
		}
		count += len(p.PubKeys)
		cursor = cmp.Or(cursor, p.Cursor)
		if p.Next == nil {
			return count, cursor, nil
		}
		after = *p.Next
	}
}

// stream reads the whole list as NDJSON and checks its end line.
func (bb *banBench) stream() (count int, size int64, err error) {
	// The whole list in one answer: httpClient's minute is too short for
	// a million keys on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", bb.srv.url+"/banlist/blocked/pubkeys", nil)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var last []byte
	for sc.Scan() {
		size += int64(len(sc.Bytes()) + 1)
		count++
		last = append(last[:0], sc.Bytes()...)
	}
	var end struct {
		End   bool `json:"end"`
		Count int  `json:"count"`
	}
	if err := json.Unmarshal(last, &end); err != nil || !end.End || end.Count != count-2 {
		return 0, 0, fmt.Errorf("the stream ended with %q after %d lines (%v)", last, count, sc.Err())
	}
	return end.Count, size, nil
}

// publishPaced publishes a note every 10 ms from one connection until ctx
// is done, and returns the OK latencies.
func publishPaced(ctx context.Context, wsURL string) ([]time.Duration, error) {
	dial, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := nostr.RelayConnect(dial, wsURL)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sk := nostr.GeneratePrivateKey()
	var lat []time.Duration
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return lat, nil
		case <-tick.C:
		}
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: note300(i)}
		ev.Sign(sk)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t0 := time.Now()
		err := r.Publish(pctx, ev)
		cancel()
		if err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		if err == nil {
			lat = append(lat, time.Since(t0))
		}
	}
}

// percentile is the p-th percentile (0 to 100) of ts, sorted in place.
func percentile(ts []time.Duration, p int) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	slices.Sort(ts)
	return ts[min(len(ts)-1, len(ts)*p/100)]
}

func (bb *banBench) idleWindow() time.Duration {
	if bb.b.smoke {
		return 2 * time.Second
	}
	return 10 * time.Second
}

func (bb *banBench) publishIdle(n int, label func(string) string) ([]row, error) {
	lat, err := bb.publishLatencies(bb.idleWindow())
	if err != nil {
		return nil, err
	}
	return []row{{measure: label("publish OK latency, p50 / p99 (a note every 10 ms)"),
		value: fmt.Sprintf("%s / %s", msText(millis(percentile(lat, 50))), msText(millis(percentile(lat, 99))))}}, nil
}
