package policies

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// hostile is a follow target: an httptest server on 127.0.0.1 whose
// answers to the ban list's paths the test scripts, counting the requests
// and the bytes it got written.
type hostile struct {
	srv      *httptest.Server
	requests atomic.Int64
	written  atomic.Int64
	mu       sync.Mutex
	answer   func(w http.ResponseWriter, r *http.Request) // may change
}

func newHostile(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *hostile {
	h := &hostile{answer: answer}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		h.mu.Lock()
		answer := h.answer
		h.mu.Unlock()
		answer(countingWriter{w, &h.written}, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostile) set(answer func(w http.ResponseWriter, r *http.Request)) {
	h.mu.Lock()
	h.answer = answer
	h.mu.Unlock()
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// endless writes prefix, then chunk again and again until the client goes
// away (or 256 MiB, so that a test of a broken client ends).
func endless(prefix, chunk string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, prefix)
		c := []byte(strings.Repeat(chunk, max(1, (32<<10)/len(chunk))))
		for n := 0; n < 256<<20 && r.Context().Err() == nil; n += len(c) {
			if _, err := w.Write(c); err != nil {
				return
			}
		}
	}
}

func jsonAnswer(body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func npubOf(i int) string { return pubkey.NPub(pk(i)) }

// A follow target streaming a body that never ends costs the follower one
// bounded element, not the body: a string that never ends is refused after
// maxElementBytes, an array that never ends after maxListEntries; the list
// held is kept. (Before, the whole body was read into memory up to 64 MiB,
// on every poll.)
func TestEndlessBodies(t *testing.T) {
	t.Parallel()
	entry := `{"pubkey":"` + npubOf(1) + `","reason":"x","expires_at":null},`
	for _, c := range []struct {
		name          string
		prefix, chunk string
		within        int64 // bytes the follower may read before it gives up
	}{
		{"endless string", `{"pubkeys":[{"pubkey":"`, "a", 8 << 20},
		{"endless member name", `{"`, "a", 8 << 20},
		{"endless array", `{"pubkeys":[`, entry, 40 << 20},
		{"endless nesting", `{"other":`, "[", 8 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHostile(t, endless(c.prefix, c.chunk))
			list := NewBanList()
			list.Ban(Ban{PubKey: pk(7), Reason: "held"})
			_, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{List: list, Log: quiet, Interval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("read %d KiB", h.written.Load()>>10)
			if n := h.written.Load(); n > c.within {
				t.Fatalf("the follower read %d MiB of an endless body before giving up; want at most %d MiB", n>>20, c.within>>20)
			}
			if _, ok := list.Banned(pk(7), 0); !ok || list.Len() != 1 {
				t.Fatalf("the list held was not kept: %d bans", list.Len())
			}
		})
	}
}

// Answers that are not a ban list (a `{}` from another JSON service at the
// URL, HTML from a proxy, an array) are failures: the list held is kept,
// not emptied.
func TestGarbageKeepsTheList(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{}`, `{"cursor":"1"}`, `<html>bad gateway</html>`, `[1,2]`, `{"pubkeys":{"a":1}}`, `{"pubkeys":[1]}`, ``} {
		h := newHostile(t, jsonAnswer(body))
		list := NewBanList()
		list.Ban(Ban{PubKey: pk(7), Reason: "held"})
		health := new(SyncHealth)
		_, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{List: list, Log: quiet, Interval: time.Hour, Health: health})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := list.Banned(pk(7), 0); !ok {
			t.Fatalf("%q emptied the list", body)
		}
		if st := health.State(time.Now()); st.FailingSince.IsZero() || st.Err == nil {
			t.Fatalf("%q: the sync is not recorded as failing: %+v", body, st)
		}
	}
}

// A follow target that answers nothing, or trickles its answer a byte at
// a time, is cut off at the request's timeout, whatever client is given;
// and the health reports a hang as failing once it has lasted FailAfter,
// before the timeout.
func TestHangAndTrickle(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	trickle := func(w http.ResponseWriter, r *http.Request) {
		for _, b := range []byte(`{"pubkeys":[{"pubkey":"` + strings.Repeat("a", 1<<20)) {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for name, answer := range map[string]func(http.ResponseWriter, *http.Request){"hang": hang, "trickle": trickle} {
		t.Run(name, func(t *testing.T) {
			h := newHostile(t, answer)
			_, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{Client: &http.Client{}, Timeout: 200 * time.Millisecond, Log: quiet})
			if err == nil {
				t.Fatal("a first sync against a target that never answers succeeded")
			}
		})
	}

	// The health of an attempt that hangs, on a clock the test moves.
	h := newHostile(t, hang)
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	health := new(SyncHealth)
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, h.srv.URL, NewBanList(), SyncOptions{Log: quiet, Health: health, Now: clock.Now, Timeout: time.Hour})
	}()
	t.Cleanup(func() { cancel(); <-done })
	testkit.WaitFor(t, 10*time.Second, "the first request", func() bool { return h.requests.Load() > 0 })
	if st := health.State(clock.Now()); st.Failing || !st.FailingSince.IsZero() {
		t.Fatalf("failing at once: %+v", st)
	}
	clock.Add(FailAfter + time.Second)
	st := health.State(clock.Now())
	if !st.Failing || !st.FailingSince.Equal(time.Unix(1_800_000_000, 0)) || st.Err != errNoAnswer {
		t.Fatalf("a request hanging for longer than FailAfter is not failing since it began: %+v", st)
	}
}

// While the target fails the follower backs off: over a second of
// failures with a 5 ms interval it tries a handful of times, not two
// hundred; once the target answers, it polls every interval again, and
// its health is good again.
func TestBackoff(t *testing.T) {
	t.Parallel() // other tests' load can only make fewer requests in its second
	var broken atomic.Bool
	broken.Store(true)
	full := `{"pubkeys":[],"cursor":"1","service_pubkey":"aa","epoch":"e"}`
	h := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		if strings.Contains(r.URL.Path, "words") {
			jsonAnswer(`{"words":[],"added":[],"removed":[],"cursor":"1","service_pubkey":"aa","epoch":"e"}`)(w, r)
			return
		}
		jsonAnswer(strings.Replace(full, `"pubkeys":[]`, `"pubkeys":[],"added":[],"lifted":[],"expired":[]`, 1))(w, r)
	})
	health := new(SyncHealth)
	start := time.Now()
	_, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{List: NewBanList(), Interval: 5 * time.Millisecond, Log: quiet, Health: health})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a second to pass", func() bool { return time.Since(start) > time.Second })
	if n := h.requests.Load(); n > 30 {
		t.Fatalf("%d requests in a second of failures at a 5 ms interval: no back-off", n)
	}
	if st := health.State(time.Now()); st.FailingSince.IsZero() {
		t.Fatalf("a second of failures, not recorded: %+v", st)
	}
	broken.Store(false)
	testkit.WaitFor(t, 10*time.Second, "the health to recover", func() bool { return health.State(time.Now()).FailingSince.IsZero() })
	n := h.requests.Load()
	testkit.WaitFor(t, 10*time.Second, "polls every interval again", func() bool { return h.requests.Load() > n+40 })
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	for n := range 30 {
		for range 100 {
			d := backoff(2*time.Second, n)
			want := min(2*time.Second<<min(n, 20), maxBackoff)
			if d < want/2 || d > want {
				t.Fatalf("backoff(2s, %d) = %v, want within [%v, %v]", n, d, want/2, want)
			}
		}
	}
	if d := backoff(time.Hour, 3); d < 30*time.Minute || d > time.Hour {
		t.Fatalf("an interval over the cap: %v", d)
	}
}

// primary is a scripted outpost: bans with the time they were made,
// answering the whole list or the changes since a cursor, under an
// identity.
type primary struct {
	mu   sync.Mutex
	id   Identity
	bans map[int]int64 // pk(i) → when banned (cursor units)
	now  int64
}

func (p *primary) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tail := fmt.Sprintf(`"cursor":"%d","service_pubkey":%q,"epoch":%q`, p.now, p.id.PubKey, p.id.Epoch)
	if strings.HasSuffix(r.URL.Path, "/words") {
		jsonAnswer(`{"words":[],"added":[],"removed":[],`+tail+`}`)(w, r)
		return
	}
	var since int64 = -1
	if r.URL.Query().Has("since") {
		fmt.Sscan(r.URL.Query().Get("since"), &since)
	}
	var entries []string
	for i, at := range p.bans {
		if at > since {
			entries = append(entries, fmt.Sprintf(`{"pubkey":%q,"reason":"","expires_at":null}`, npubOf(i)))
		}
	}
	list := "pubkeys"
	if since >= 0 {
		list = "added"
		tail = `"lifted":[],"expired":[],` + tail
	}
	jsonAnswer(`{"`+list+`":[`+strings.Join(entries, ",")+`],`+tail+`}`)(w, r)
}

func (p *primary) ban(i int) {
	p.mu.Lock()
	p.now++
	p.bans[i] = p.now
	p.mu.Unlock()
}

// A follower whose URL is answered by another server (another identity:
// a node promoted behind the same name) takes that server's whole list:
// it drops the old primary's bans the new one does not have, gets those
// the new one made before the switch, and then its changes. (Before, it
// asked the new server for the changes since the old one's cursor, kept
// the stale bans and missed the earlier ones.)
func TestAnotherServerAtTheURL(t *testing.T) {
	t.Parallel()
	a := &primary{id: Identity{PubKey: "aa", Epoch: "1"}, bans: map[int]int64{}, now: 100}
	b := &primary{id: Identity{PubKey: "bb", Epoch: "1"}, bans: map[int]int64{}, now: 0}
	a.ban(1)
	a.ban(2)
	b.ban(3) // made on b long before the follower's cursor from a (101)
	b.now = 200
	h := newHostile(t, a.ServeHTTP)
	list, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{Interval: 5 * time.Millisecond, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a's bans", func() bool { return list.Len() == 2 })
	h.set(b.ServeHTTP)
	b.ban(4)
	testkit.WaitFor(t, 10*time.Second, "b's list to replace a's", func() bool {
		_, b3 := list.Banned(pk(3), 0)
		_, b4 := list.Banned(pk(4), 0)
		return b3 && b4
	})
	if _, ok := list.Banned(pk(1), 0); ok || list.Len() != 2 {
		t.Fatalf("the old primary's bans were kept: %d bans", list.Len())
	}
	// The same epoch under another key is another server too, and so is
	// another epoch under the same key (a restored node).
	c := &primary{id: Identity{PubKey: "bb", Epoch: "2"}, bans: map[int]int64{6: 1}, now: 300}
	h.set(c.ServeHTTP)
	testkit.WaitFor(t, 10*time.Second, "c's list to replace b's", func() bool {
		_, b5 := list.Banned(pk(6), 0)
		return b5 && list.Len() == 1
	})
}

// Entries no outpost sends (keys that are not keys, words over 400 bytes)
// are skipped with one line in the log per answer, not one per entry: a
// remote cannot flood the log.
func TestBadEntriesAreSkippedQuietly(t *testing.T) {
	t.Parallel()
	bad := strings.Repeat(`{"pubkey":"npub1notakey","reason":""},null,`, 1000)
	h := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/words") {
			jsonAnswer(`{"words":["fine","`+strings.Repeat("w", 401)+`"],"cursor":"1"}`)(w, r)
			return
		}
		jsonAnswer(`{"pubkeys":[`+bad+`{"pubkey":"`+npubOf(1)+`","reason":"ok"}],"cursor":"1"}`)(w, r)
	})
	var logs testkit.LogBuffer
	list, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{Log: slog.New(slog.NewTextHandler(&logs, nil)), Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := list.Banned(pk(1), 0); !ok || list.Len() != 1 {
		t.Fatalf("%d bans; want the one good one", list.Len())
	}
	if w := list.Words(); len(w) != 1 || w[0] != "fine" {
		t.Fatalf("words %q", w)
	}
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Fatalf("%d lines logged for one answer of bad keys and one of bad words:\n%.2000s", n, logs.String())
	}
}

// A 410 to a request for the whole list, or a 304 to one without an ETag,
// makes no sense: it is a failure, and the list held is kept. (Before, the
// list was emptied.)
func TestStatusesOutOfPlace(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusGone, http.StatusNotModified} {
		h := newHostile(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) })
		list := NewBanList()
		list.Ban(Ban{PubKey: pk(7), Reason: "held"})
		health := new(SyncHealth)
		if _, err := SyncBanList(testCtx(t), h.srv.URL, SyncOptions{List: list, Log: quiet, Interval: time.Hour, Health: health}); err != nil {
			t.Fatal(err)
		}
		if _, ok := list.Banned(pk(7), 0); !ok {
			t.Fatalf("a %d emptied the list", code)
		}
		if st := health.State(time.Now()); st.Err == nil {
			t.Fatalf("a %d is taken for an answer", code)
		}
	}
}

// A list larger than one answer may hold is fetched in pages, each under
// the bounds of one answer, and then followed by its changes. (Before, the
// whole list was one answer, refused past maxListEntries: a follower of a
// long list enforced nothing.) Its changes are then polled as before.
func TestSnapshotInPages(t *testing.T) {
	maxListEntries = 1000
	t.Cleanup(func() { maxListEntries = 200_000 })
	var keys []string
	for i := 1; len(keys) < 2500; i++ {
		if k, err := pubkey.Parse(fmt.Sprintf("%064x", i)); err == nil {
			keys = append(keys, k)
		}
	}
	var pages atomic.Int64
	tail := `"cursor":"1","service_pubkey":"` + pk(1) + `","epoch":"e1"`
	srv := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case strings.HasSuffix(r.URL.Path, "/words"):
			jsonAnswer(`{"words":[],"added":[],"removed":[],`+tail+`}`)(w, r)
		default:
			pages.Add(1)
			from := 0
			for from < len(keys) && q.Get("after") != "" && keys[from] <= q.Get("after") {
				from++
			}
			end := len(keys)
			if q.Has("limit") {
				end = min(from+1000, len(keys))
			}
			var entries []string
			for _, k := range keys[from:end] {
				entries = append(entries, fmt.Sprintf(`{"pubkey":%q,"reason":"wave","expires_at":null}`, k))
			}
			next := "null"
			if end < len(keys) {
				next = `"` + keys[end-1] + `"`
			}
			jsonAnswer(`{"pubkeys":[`+strings.Join(entries, ",")+`],"next":`+next+`,`+tail+`}`)(w, r)
		}
	})
	ctx := testCtx(t)
	l, err := SyncBanList(ctx, srv.srv.URL, SyncOptions{Interval: time.Hour, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if n := l.ActiveBans(time.Now().Unix()); n != len(keys) {
		t.Fatalf("%d bans held, want %d", n, len(keys))
	}
	if n := pages.Load(); n != 3 {
		t.Errorf("%d pages fetched, want 3", n)
	}
}
