package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// TestKillAtAnyInstant kills outpost (SIGKILL) at random instants, the
// default run with its embedded mint: half of the kills within the first
// freshWindow of a start on a new data dir, the other half within
// writesWindow of a start on one data dir, a start followed by notes
// published over websockets as soon as it serves. After every kill the
// next start must serve and be healthy, with every note acknowledged with
// OK true before the kill. killRounds kills take some minutes
// (docs/operating.md has the figures); -short runs killRoundsShort: two
// of each kind, every path once more than the first (about a second each).
const (
	killRounds      = 200
	killRoundsShort = 4
	freshWindow     = 500 * time.Millisecond
	writesWindow    = time.Second
)

// killSeedEnv replays a run of TestKillAtAnyInstant: its value is the seed
// the run logged.
const killSeedEnv = "OUTPOST_TEST_KILL_SEED"

// killSettings are the settings of the killed outposts: notes unlimited,
// and a temporary directory of the test's (gonuts copies its migrations to
// one at every start, which a kill leaves behind).
func killSettings(t *testing.T) map[string]string {
	return map[string]string{"OUTPOST_LOG_LEVEL": "info", "TMPDIR": t.TempDir(),
		"OUTPOST_RELAY_EVENTS_PER_MINUTE": "0", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE": "0"}
}

func TestKillAtAnyInstant(t *testing.T) {
	t.Parallel()
	rounds := killRounds
	if testing.Short() {
		rounds = killRoundsShort
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(killSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", killSeedEnv, err)
		}
	}
	t.Logf("seed %d (%s=%d replays the same kill instants)", seed, killSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	outpostBinary(t) // built before the clock starts
	settings := killSettings(t)

	began := time.Now()
	for i := range rounds / 2 {
		if !t.Run(fmt.Sprintf("fresh-%03d", i), func(t *testing.T) { killFresh(t, rng, settings) }) {
			return
		}
	}
	t.Logf("%d kills on new data dirs, each followed by a start: %v", rounds/2, time.Since(began).Round(time.Second))

	began = time.Now()
	w := &killWrites{dir: t.TempDir(), sk: nostr.GeneratePrivateKey(), settings: settings}
	for i := range rounds - rounds/2 {
		if !t.Run(fmt.Sprintf("writes-%03d", i), func(t *testing.T) { w.round(t, i, rng) }) {
			return
		}
	}
	c := startChild(t, w.dir, settings)
	if missing := missingNotes(t, c.url, w.acked); len(missing) > 0 {
		t.Fatalf("%d of the %d notes acknowledged over all rounds are missing, e.g. %s", len(missing), len(w.acked), missing[0])
	}
	t.Logf("%d kills on one data dir, each followed by a start: %v; %d of the killed starts served; %d notes acknowledged, all there",
		rounds-rounds/2, time.Since(began).Round(time.Second), w.served, len(w.acked))
}

// randUpTo is a random duration from 0 to d.
func randUpTo(rng *rand.Rand, d time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(d) + 1))
}

// killFresh starts outpost on a new data dir, kills it within freshWindow,
// and starts it again.
func killFresh(t *testing.T, rng *rand.Rand, settings map[string]string) {
	dir := t.TempDir()
	c, _ := launchChild(t, dir, settings)
	killAfter(t, c, randUpTo(rng, freshWindow))
	startChild(t, dir, settings).kill()
}

// killAfter kills c after d, failing the test if it exited by itself first.
func killAfter(t *testing.T, c *child, d time.Duration) {
	t.Helper()
	select {
	case <-c.done:
		t.Fatalf("outpost exited by itself (%v) within %v of its start", c.cmd.ProcessState, d)
	case <-time.After(d):
	}
	c.kill()
	t.Logf("killed %v after its start", d)
}

// killWrites is the data dir outpost is killed on under writes, and what
// was written to it.
type killWrites struct {
	dir      string
	sk       string
	settings map[string]string
	acked    []string // ids of the notes acknowledged with OK true, in every round
	served   int      // killed starts that served before their kill
}

// round starts outpost, publishes notes from two connections once it
// serves, kills it within writesWindow of its start, starts it again and
// looks for the notes acknowledged.
func (w *killWrites) round(t *testing.T, i int, rng *rand.Rand) {
	c, out := launchChild(t, w.dir, w.settings)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var acked []string
	served := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		url, err := servingURL(out, time.Minute) // fails once the kill closes stdout
		if err != nil {
			return
		}
		close(served)
		var writers sync.WaitGroup
		for n := range 2 {
			writers.Go(func() {
				ids := publishNotes(ctx, url, w.sk, fmt.Sprintf("round %d writer %d", i, n))
				mu.Lock()
				acked = append(acked, ids...)
				mu.Unlock()
			})
		}
		writers.Wait()
	})
	killAfter(t, c, randUpTo(rng, writesWindow))
	cancel()
	wg.Wait()
	select {
	case <-served:
		w.served++
	default:
	}
	w.acked = append(w.acked, acked...)
	t.Logf("%d notes acknowledged before the kill", len(acked))

	again := startChild(t, w.dir, w.settings)
	if missing := missingNotes(t, again.url, acked); len(missing) > 0 {
		t.Fatalf("%d of the %d notes acknowledged before the kill are missing, e.g. %s", len(missing), len(acked), missing[0])
	}
	again.kill()
}

// publishNotes publishes notes over one websocket connection to the relay
// at url until ctx ends or the connection does, and returns the ids of
// those acknowledged with OK true.
func publishNotes(ctx context.Context, url, sk, label string) []string {
	conn, err := dialRelay(ctx, url)
	if err != nil {
		return nil
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var ids []string
	for n := 0; ctx.Err() == nil; n++ {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: fmt.Sprintf("%s note %d", label, n)}
		if err := ev.Sign(sk); err != nil {
			return ids
		}
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := conn.WriteJSON([]any{"EVENT", ev}); err != nil {
			return ids
		}
		ok, err := readOK(conn, ev.ID)
		if err != nil {
			return ids
		}
		if ok {
			ids = append(ids, ev.ID)
		}
	}
	return ids
}

// readOK reads messages until the relay's OK for id and returns its verdict.
func readOK(conn *websocket.Conn, id string) (bool, error) {
	for {
		msg, err := readMessage(conn)
		if err != nil {
			return false, err
		}
		if len(msg) >= 3 && string(msg[0]) == `"OK"` && string(msg[1]) == strconv.Quote(id) {
			return string(msg[2]) == "true", nil
		}
	}
}

// readMessage reads one relay message as its JSON array's elements.
func readMessage(conn *websocket.Conn) ([]json.RawMessage, error) {
	conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a deadline, not a limit asserted: generous under load
	_, b, err := conn.ReadMessage()
	if err != nil {
		return nil, err
	}
	var msg []json.RawMessage
	return msg, json.Unmarshal(b, &msg)
}

func dialRelay(ctx context.Context, url string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, _, err := websocket.DefaultDialer.DialContext(dctx, "ws"+strings.TrimPrefix(url, "http"), nil)
	return conn, err
}

// missingNotes returns the ids of those notes the relay at url does not
// have, asking for them by id, 200 at a time.
func missingNotes(t *testing.T, url string, ids []string) []string {
	t.Helper()
	conn, err := dialRelay(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var missing []string
	for batch := range slices.Chunk(ids, 200) {
		found := map[string]bool{}
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := conn.WriteJSON([]any{"REQ", "check", nostr.Filter{IDs: batch, Limit: len(batch)}}); err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := readMessage(conn)
			if err != nil {
				t.Fatal(err)
			}
			if string(msg[0]) == `"EOSE"` {
				break
			}
			var ev nostr.Event
			if string(msg[0]) == `"EVENT"` && len(msg) == 3 && json.Unmarshal(msg[2], &ev) == nil {
				found[ev.ID] = true
			}
		}
		conn.WriteJSON([]any{"CLOSE", "check"})
		for _, id := range batch {
			if !found[id] {
				missing = append(missing, id)
			}
		}
	}
	return missing
}
