// Package strfry is a strfry write-policy plugin that enforces a remote
// outpost's ban list: strfry writes one JSON line per event to the plugin's
// stdin ({"type":"new","event":{...},"receivedAt":...,"sourceType":"IP4",
// "sourceInfo":"1.2.3.4"}) and reads one line back per event
// ({"id":...,"action":"accept"} or {"id":...,"action":"reject","msg":
// "blocked: ..."}), in order
// (https://github.com/hoytech/strfry/blob/master/docs/plugins.md).
//
// The list is followed with policies.SyncBanList (changes since the last
// answer, polled; the whole list again when another server answers at the
// URL; less often while the outpost fails) and kept in a cache file, so
// the plugin starts and decides with the last list it saw when the outpost
// is unreachable.
package strfry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/policies"
	"github.com/tidwall/gjson"
)

// maxLine bounds one input line (an event with its envelope); strfry's own
// events are far smaller.
const maxLine = 16 << 20

// Decide answers one input line: the JSON line to write back, or nil when
// strfry expects no answer (a message type other than "new"; a line with
// no event id, which cannot be answered). why says what was wrong with a
// line that got no answer.
func Decide(l *policies.BanList, line []byte, now int64) (answer []byte, why string) {
	if !gjson.ValidBytes(line) {
		return nil, "not JSON"
	}
	msg := gjson.ParseBytes(line)
	if t := msg.Get("type").String(); t != "new" {
		return nil, fmt.Sprintf("message type %q: no answer expected", t)
	}
	evj := msg.Get("event")
	id := evj.Get("id")
	if id.Type != gjson.String || id.String() == "" {
		return nil, "an event without an id"
	}
	kind := evj.Get("kind")
	pk := evj.Get("pubkey")
	if pk.Type != gjson.String || kind.Type != gjson.Number {
		return reply(id.String(), "reject", "invalid: the event has no pubkey or kind"), ""
	}
	if m, banned := l.BannedMessage(pk.String(), now); banned {
		return reply(id.String(), "reject", m), ""
	}
	ev := nostr.Event{PubKey: pk.String(), Kind: int(kind.Int()), Content: evj.Get("content").String()}
	if m, blocked := l.BlockedMessage(&ev); blocked {
		return reply(id.String(), "reject", m), ""
	}
	return reply(id.String(), "accept", ""), ""
}

// gcPercent is the collector's GOGC for the plugin's whole run (unless
// GOGC is set in its environment). Its heap is almost all the list, whose
// keys are pointer-free chunks the collector does not scan, so collecting
// often costs little; at the default of 100 the heap grew to twice the
// list, first while the whole list was taken (each page's decoding is
// garbage) and then with the decisions' garbage: 104 MiB anonymous at a
// million keys where the list is 45 MiB (BENCHMARKS.md §14). At 10 the
// decisions/s did not change.
const gcPercent = 10

// tightGC sets the collector to gcPercent until the returned func, which
// puts it back.
func tightGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	was := debug.SetGCPercent(gcPercent)
	return func() { debug.SetGCPercent(was) }
}

type output struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	Msg    string `json:"msg,omitempty"`
}

func reply(id, action, msg string) []byte {
	b, _ := json.Marshal(output{ID: id, Action: action, Msg: msg})
	return append(b, '\n')
}

// Serve answers every line of in on out until in ends; each answer is
// flushed at once (strfry waits for it). Lines it cannot answer are
// reported on log.
func Serve(l *policies.BanList, in io.Reader, out io.Writer, now func() time.Time, log *slog.Logger) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		answer, why := Decide(l, sc.Bytes(), now().Unix())
		if answer == nil {
			log.Warn("strfry-policy: line not answered", "why", why)
			continue
		}
		if _, err := w.Write(answer); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Options configure Run.
type Options struct {
	From     string        // the outpost's ban list base URL, e.g. https://outpost.example/banlist
	Cache    string        // cache file
	Interval time.Duration // between polls; default 30s
	Log      *slog.Logger
	Now      func() time.Time
}

// Run loads the cache, follows the remote list (applying each change to
// the cache file too) and answers strfry on in/out until in ends or ctx is
// done. With a cache it answers at once, from the cache until the first
// sync is done; without one the first sync must work before it answers.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	defer tightGC()()
	l := policies.NewBanList()
	c, found, err := openCache(l, o.Cache, o.Log)
	if err != nil {
		o.Log.Warn("strfry-policy: the cache is unreadable; starting without it", "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	f := policies.NewFollower(o.From, c, policies.SyncOptions{Interval: o.Interval, Log: o.Log})
	if !found {
		err := f.Sync(ctx)
		debug.FreeOSMemory() // the pages' garbage: the list is what stays
		if err != nil {
			cancel()
			c.Close()
			return fmt.Errorf("no cached list at %s and the ban list at %s is unreachable: %w", o.Cache, o.From, err)
		}
	}
	following := make(chan struct{})
	go func() {
		defer close(following)
		if found {
			f.Sync(ctx)
		}
		f.Run(ctx)
	}()
	err = Serve(l, in, out, o.Now, o.Log)
	cancel()
	<-following // the follower writes the cache file: done with it before it is closed
	return errors.Join(err, c.Close())
}
