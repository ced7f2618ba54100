package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// loadResult is what one REQ load measured.
type loadResult struct {
	Requests int       `json:"requests"`
	Returned int       `json:"returned"` // events per REQ
	Bytes    int       `json:"bytes"`    // of EVENT messages per REQ (mean)
	Seconds  float64   `json:"seconds"`
	PerSec   float64   `json:"per_sec"`
	P50ms    float64   `json:"p50_ms"`
	P99ms    float64   `json:"p99_ms"`
	Counts   []int     `json:"counts,omitempty"`  // with -filters on one connection: the events of each REQ, in order
	TookMs   []float64 `json:"took_ms,omitempty"` // and the time of each (the first includes checking its events)
}

// reqloadMain sends one REQ after another on each of several connections
// and times each from the REQ to its EOSE. It is a thin client on purpose:
// it reads frames and counts the EVENTs of its subscription, so the figures
// are the relay's; the first answer of the first connection is decoded and
// checked in full (every event matches, signatures hold, newest first).
// With -filters, the REQs take their filters in turn from a file, each
// connection starting at its own place in it; Returned is then the mean.
func reqloadMain(args []string) error {
	fs := flag.NewFlagSet("reqload", flag.ExitOnError)
	url := fs.String("url", "", "relay ws:// URL")
	filter := fs.String("filter", `{"kinds":[1],"limit":500}`, "the filter of every REQ")
	conns := fs.Int("conns", 1, "connections, each sending one REQ at a time")
	d := fs.Duration("duration", 0, "run this long (0: -requests per connection)")
	requests := fs.Int("requests", 100, "REQs per connection when -duration is 0")
	expect := fs.Int("expect", -1, "events every REQ must return (-1: any, all the same; with -filters: not checked)")
	file := fs.String("filters", "", "a file of filters, one a line, the REQs take in turn (instead of -filter)")
	fs.Parse(args)
	l := &reqLoad{returned: *expect, same: *file == "", requests: *requests, timed: *d > 0}
	if err := l.readFilters(*filter, *file); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *d+10*time.Minute)
	defer cancel()
	wss := make([]*websocket.Conn, *conns)
	for i := range wss {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, *url, nil)
		if err != nil {
			return err
		}
		defer ws.Close()
		wss[i] = ws
	}
	l.conns = len(wss)
	l.end = time.Now().Add(*d)
	start := time.Now()
	var wg sync.WaitGroup
	for i, ws := range wss {
		wg.Go(func() { l.connection(i, ws) })
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if l.firstErr != nil {
		return l.firstErr
	}
	if len(l.took) == 0 {
		return fmt.Errorf("reqload: no REQ completed")
	}
	if !l.same {
		l.returned = l.total / l.answered
	}
	took := l.took
	slices.Sort(took)
	return json.NewEncoder(os.Stdout).Encode(loadResult{Requests: len(took), Returned: l.returned, Bytes: int(l.bytes / int64(l.answered)), Seconds: secs,
		PerSec: float64(len(took)) / secs, P50ms: millis(took[len(took)/2]), P99ms: millis(took[len(took)*99/100]), Counts: l.counts, TookMs: l.tookMs})
}

// millis is d in milliseconds, to the microsecond, as the results report times.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// reqLoad is one run of reqload: its filters, and what its connections
// measured.
type reqLoad struct {
	raw      []string // the filters, as sent
	filters  []nostr.Filter
	same     bool // one filter: every REQ must return as many events
	conns    int
	requests int // per connection, unless timed
	timed    bool
	end      time.Time

	mu              sync.Mutex
	took            []time.Duration
	counts          []int     // the events of each REQ, on one connection
	tookMs          []float64 // and the time of each
	total, answered int
	bytes           int64 // of EVENT messages
	returned        int
	firstErr        error
}

// readFilters takes the filters from file, or the one filter when file is "".
func (l *reqLoad) readFilters(filter, file string) error {
	l.raw = []string{filter}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		l.raw = strings.Fields(string(b))
	}
	l.filters = make([]nostr.Filter, len(l.raw))
	for i := range l.raw {
		if err := json.Unmarshal([]byte(l.raw[i]), &l.filters[i]); err != nil {
			return fmt.Errorf("reqload: filter %d: %w", i, err)
		}
	}
	return nil
}

// connection sends REQs on ws, connection i, until the run is over.
func (l *reqLoad) connection(i int, ws *websocket.Conn) {
	var mine []time.Duration
	var err error
	for n := 0; l.timed && time.Now().Before(l.end) || !l.timed && n < l.requests; n++ {
		k := (i*len(l.raw)/l.conns + n) % len(l.raw)
		checked := i == 0 && n == 0
		var got, size int
		var t time.Duration
		if got, size, t, err = oneREQ(ws, fmt.Sprintf("q%d", n), l.raw[k], l.filters[k], checked); err != nil {
			break
		}
		if err = l.tally(got, size, t); err != nil {
			break
		}
		// The checked REQ's time is mostly this client verifying signatures.
		if !checked || l.conns*l.requests == 1 && !l.timed {
			mine = append(mine, t)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.took = append(l.took, mine...)
	if err != nil && l.firstErr == nil {
		l.firstErr = err
	}
}

// tally counts one REQ's events, size bytes of messages, which took t.
func (l *reqLoad) tally(got, size int, t time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total, l.answered, l.bytes = l.total+got, l.answered+1, l.bytes+int64(size)
	if l.conns == 1 {
		l.counts = append(l.counts, got)
		l.tookMs = append(l.tookMs, millis(t))
	}
	if !l.same {
		return nil
	}
	if l.returned == -1 {
		l.returned = got
	}
	if got != l.returned {
		return fmt.Errorf("a REQ returned %d events, another %d", got, l.returned)
	}
	return nil
}

// oneREQ sends a REQ, reads to its EOSE and closes the subscription; it
// returns the events received, the bytes of their messages and the time to
// EOSE. check decodes and checks every event against f.
func oneREQ(ws *websocket.Conn, id, rawFilter string, f nostr.Filter, check bool) (n, size int, took time.Duration, err error) {
	evPrefix := []byte(`["EVENT","` + id + `",`)
	eose := []byte(`["EOSE","` + id + `"]`)
	start := time.Now()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`["REQ","`+id+`",`+rawFilter+`]`)); err != nil {
		return 0, 0, 0, err
	}
	var buf bytes.Buffer
	var last *nostr.Event
	for {
		_, r, err := ws.NextReader()
		if err != nil {
			return n, size, 0, err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil && err != io.EOF {
			return n, size, 0, err
		}
		msg := bytes.TrimRight(buf.Bytes(), " \t\r\n") // khatru ends frames with a newline
		switch {
		case bytes.HasPrefix(msg, evPrefix):
			n, size = n+1, size+len(msg)
			if check {
				ev, err := checkEvent(msg[len(evPrefix):len(msg)-1], f, last)
				if err != nil {
					return n, size, 0, err
				}
				last = ev
			}
		case bytes.Equal(msg, eose):
			return n, size, time.Since(start), ws.WriteMessage(websocket.TextMessage, []byte(`["CLOSE","`+id+`"]`))
		case bytes.HasPrefix(msg, []byte(`["CLOSED"`)):
			return n, size, 0, fmt.Errorf("REQ refused: %s", msg)
		}
	}
}

// checkEvent decodes one served event and checks it: valid signature, a
// match of the filter, not newer than the one before.
func checkEvent(raw []byte, f nostr.Filter, prev *nostr.Event) (*nostr.Event, error) {
	ev := &nostr.Event{}
	if err := json.Unmarshal(raw, ev); err != nil {
		return nil, fmt.Errorf("served event does not decode: %w", err)
	}
	if ok, err := ev.CheckSignature(); !ok || !ev.CheckID() {
		return nil, fmt.Errorf("served event %s has a bad id or signature (%v)", ev.ID, err)
	}
	if !f.Matches(ev) {
		return nil, fmt.Errorf("served event %s does not match %v", ev.ID, f)
	}
	if prev != nil && ev.CreatedAt > prev.CreatedAt {
		return nil, fmt.Errorf("served events are not newest first")
	}
	return ev, nil
}
