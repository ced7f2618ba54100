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
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// loadResult is what one REQ load measured.
type loadResult struct {
	Requests int     `json:"requests"`
	Returned int     `json:"returned"` // events per REQ
	Seconds  float64 `json:"seconds"`
	PerSec   float64 `json:"per_sec"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
}

// reqloadMain sends one REQ after another on each of several connections
// and times each from the REQ to its EOSE. It is a thin client on purpose:
// it reads frames and counts the EVENTs of its subscription, so the figures
// are the relay's; the first answer of the first connection is decoded and
// checked in full (every event matches, signatures hold, newest first).
func reqloadMain(args []string) error {
	fs := flag.NewFlagSet("reqload", flag.ExitOnError)
	url := fs.String("url", "", "relay ws:// URL")
	filter := fs.String("filter", `{"kinds":[1],"limit":500}`, "the filter of every REQ")
	conns := fs.Int("conns", 1, "connections, each sending one REQ at a time")
	d := fs.Duration("duration", 0, "run this long (0: -requests per connection)")
	requests := fs.Int("requests", 100, "REQs per connection when -duration is 0")
	expect := fs.Int("expect", -1, "events every REQ must return (-1: any, all the same)")
	fs.Parse(args)
	var f nostr.Filter
	if err := json.Unmarshal([]byte(*filter), &f); err != nil {
		return fmt.Errorf("reqload: -filter: %w", err)
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
	var (
		mu       sync.Mutex
		took     []time.Duration
		returned = *expect
		firstErr error
		wg       sync.WaitGroup
	)
	end := time.Now().Add(*d)
	start := time.Now()
	for i, ws := range wss {
		wg.Go(func() {
			var mine []time.Duration
			var err error
			for n := 0; ; n++ {
				if *d > 0 && !time.Now().Before(end) || *d == 0 && n == *requests {
					break
				}
				var got int
				var t time.Duration
				if got, t, err = oneREQ(ws, fmt.Sprintf("q%d", n), *filter, f, i == 0 && n == 0); err != nil {
					break
				}
				mu.Lock()
				if returned == -1 {
					returned = got
				}
				if got != returned {
					err = fmt.Errorf("a REQ returned %d events, another %d", got, returned)
				}
				mu.Unlock()
				if err != nil {
					break
				}
				mine = append(mine, t)
			}
			mu.Lock()
			took = append(took, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return firstErr
	}
	if len(took) == 0 {
		return fmt.Errorf("reqload: no REQ completed")
	}
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return json.NewEncoder(os.Stdout).Encode(loadResult{Requests: len(took), Returned: returned, Seconds: secs,
		PerSec: float64(len(took)) / secs, P50ms: ms(took[len(took)/2]), P99ms: ms(took[len(took)*99/100])})
}

// oneREQ sends a REQ, reads to its EOSE and closes the subscription; it
// returns the events received and the time to EOSE. check decodes and
// checks every event against f.
func oneREQ(ws *websocket.Conn, id, rawFilter string, f nostr.Filter, check bool) (int, time.Duration, error) {
	evPrefix := []byte(`["EVENT","` + id + `",`)
	eose := []byte(`["EOSE","` + id + `"]`)
	start := time.Now()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`["REQ","`+id+`",`+rawFilter+`]`)); err != nil {
		return 0, 0, err
	}
	var buf bytes.Buffer
	var last *nostr.Event
	n := 0
	for {
		_, r, err := ws.NextReader()
		if err != nil {
			return n, 0, err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil && err != io.EOF {
			return n, 0, err
		}
		msg := bytes.TrimRight(buf.Bytes(), " \t\r\n") // khatru ends frames with a newline
		switch {
		case bytes.HasPrefix(msg, evPrefix):
			n++
			if check {
				ev, err := checkEvent(msg[len(evPrefix):len(msg)-1], f, last)
				if err != nil {
					return n, 0, err
				}
				last = ev
			}
		case bytes.Equal(msg, eose):
			took := time.Since(start)
			return n, took, ws.WriteMessage(websocket.TextMessage, []byte(`["CLOSE","`+id+`"]`))
		case bytes.HasPrefix(msg, []byte(`["CLOSED"`)):
			return n, 0, fmt.Errorf("REQ refused: %s", msg)
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
