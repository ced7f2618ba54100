package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// hostileResult is what publishers saw while (or without) connections
// held subscriptions naming many filter values.
type hostileResult struct {
	stallResult
	REQs      int     `json:"reqs"`     // hostile REQs sent
	Accepted  int     `json:"accepted"` // answered EOSE
	Refused   int     `json:"refused"`  // answered CLOSED
	Reason    string  `json:"reason"`   // the first CLOSED's
	SetupSecs float64 `json:"setup_seconds"`
	Held      mem     `json:"held"`      // -pid's memory with the subscriptions held, after publishing
	PeakAnon  int64   `json:"peak_anon"` // the most anonymous memory (Go heap, stacks) -pid had, sampled every 50 ms
}

// hostileMain opens -conns connections that each send -subs REQs of
// -filters filters of -values random "#e" or "#p" values (issue 25: about
// 255 KB a REQ) and waits for every answer, then publishes -events replies
// from 4 more connections, timing every OK, and reads -pid's RSS while the
// subscriptions are still held.
func hostileMain(args []string) error {
	fs := flag.NewFlagSet("hostile", flag.ExitOnError)
	url := fs.String("url", "", "relay ws:// URL")
	conns := fs.Int("conns", 20, "hostile connections (0: none)")
	subs := fs.Int("subs", 50, "REQs per hostile connection")
	filters := fs.Int("filters", 20, "filters per REQ")
	values := fs.Int("values", 190, "tag values per filter")
	n := fs.Int("events", 1000, "events to publish")
	pid := fs.Int("pid", 0, "the relay's process, whose RSS is read")
	deadline := fs.Duration("deadline", 10*time.Minute, "give up after this")
	settle := fs.Duration("settle", 0, "publish no sooner than this after start: outpost's own start-up work (the ban list, badger) is over by then, with or without the hostile load")
	fs.Parse(args)

	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	start := time.Now()
	res := hostileResult{REQs: *conns * *subs}
	peakAnon := func() int64 { return 0 }
	if *pid > 0 {
		peakAnon = sampleAnon(ctx, *pid)
	}
	for i := range *conns {
		c, _, err := websocket.DefaultDialer.DialContext(ctx, *url, nil)
		if err != nil {
			return fmt.Errorf("hostile connection %d: %w", i, err)
		}
		defer c.Close()
		answers := make(chan string, *subs)
		go readAnswers(c, answers)
		for j := range *subs {
			c.SetWriteDeadline(time.Now().Add(time.Minute))
			if err := c.WriteMessage(websocket.TextMessage, hostileREQ(fmt.Sprintf("h%d", j), *filters, *values)); err != nil {
				return fmt.Errorf("hostile connection %d: %w", i, err)
			}
		}
		if err := res.count(ctx, answers, *subs); err != nil {
			return fmt.Errorf("hostile connection %d: %w", i, err)
		}
	}
	res.SetupSecs = time.Since(start).Seconds()
	time.Sleep(time.Until(start.Add(*settle)))

	keys := make([]string, 64)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	events := make([]nostr.Event, *n)
	base := time.Now().Unix()
	for i := range events {
		events[i] = nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(base), Content: note300(2_000_000 + i),
			Tags: nostr.Tags{{"e", randomHex(), "", "root"}, {"p", randomHex()}}}
		events[i].Sign(keys[i%len(keys)])
	}
	var err error
	if res.stallResult, err = timePublishing(ctx, *url, events, 4, *deadline); err != nil {
		return err
	}
	if *pid > 0 {
		res.Held, res.PeakAnon = procMem(*pid), peakAnon()
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// sampleAnon reads pid's anonymous memory every 50 ms until ctx ends or
// the function it returns is called, which returns the most it saw.
func sampleAnon(ctx context.Context, pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if a := procMem(pid).Anon; a > peak.Load() {
				peak.Store(a)
			}
			select {
			case <-t.C:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// count takes n answers (EOSE or a CLOSED's reason) to REQs.
func (res *hostileResult) count(ctx context.Context, answers <-chan string, n int) error {
	for range n {
		select {
		case a, ok := <-answers:
			if !ok {
				return fmt.Errorf("the relay hung up")
			}
			if a == "" {
				res.Accepted++
				continue
			}
			if res.Refused++; res.Reason == "" {
				res.Reason = a
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// readAnswers sends "" for every EOSE and the reason of every CLOSED, and
// reads (and drops) everything else, until the connection ends.
func readAnswers(c *websocket.Conn, answers chan<- string) {
	defer close(answers)
	var once sync.Once
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		var m []json.RawMessage
		if json.Unmarshal(b, &m) != nil || len(m) < 2 {
			continue
		}
		var label, reason string
		json.Unmarshal(m[0], &label)
		switch label {
		case "EOSE":
		case "CLOSED":
			if len(m) > 2 {
				json.Unmarshal(m[2], &reason)
			}
		default:
			continue
		}
		select {
		case answers <- reason:
		default: // more answers than REQs: a CLOSED after EOSE
			once.Do(func() { fmt.Fprintln(os.Stderr, "hostile: unexpected", string(b)) })
		}
	}
}

// hostileREQ is a REQ of filters filters, each of values random 64-hex
// values of the "e" or the "p" tag, which no event of the run has. They ask
// for live events only ("limit":0): what is measured is holding them, not
// reading 3,800 tag values' stored events per REQ.
func hostileREQ(id string, filters, values int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `["REQ",%q`, id)
	for f := range filters {
		fmt.Fprintf(&b, `,{"#%s":[`, []string{"e", "p"}[f%2])
		for v := range values {
			if v > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + randomHex() + `"`)
		}
		b.WriteString(`],"limit":0}`)
	}
	b.WriteString("]")
	return []byte(b.String())
}

func randomHex() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
