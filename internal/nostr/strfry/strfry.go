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
	"path/filepath"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/tick"
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

// cache is the list as kept on disk.
type cache struct {
	Bans  []policies.Ban `json:"bans"`
	Words []string       `json:"words"`
}

// LoadCache fills l from path; a missing file is no error (found false).
func LoadCache(l *policies.BanList, path string) (found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var c cache
	if err := json.Unmarshal(b, &c); err != nil {
		return false, fmt.Errorf("cache %s: %w", path, err)
	}
	l.SetBans(c.Bans)
	l.SetWords(c.Words)
	return true, nil
}

// SaveCache writes l to path: a new file renamed over the old one, so a
// crash leaves one or the other.
func SaveCache(l *policies.BanList, path string) error {
	bans, _ := l.Bans(time.Now().Unix())
	b, err := json.Marshal(cache{Bans: bans, Words: l.Words()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Options configure Run.
type Options struct {
	From     string        // the outpost's ban list base URL, e.g. https://outpost.example/banlist
	Cache    string        // cache file
	Interval time.Duration // between polls; default 30s
	Log      *slog.Logger
	Now      func() time.Time
}

// Run loads the cache, follows the remote list (saving the cache when it
// changes) and answers strfry on in/out until in ends or ctx is done.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	l := policies.NewBanList()
	found, err := LoadCache(l, o.Cache)
	if err != nil {
		o.Log.Warn("strfry-policy: the cache is unreadable; starting without it", "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opt := policies.SyncOptions{Interval: o.Interval, Log: o.Log}
	if found {
		opt.List = l // an unreachable outpost is not fatal: the cache decides meanwhile
	}
	l, err = policies.SyncBanList(ctx, o.From, opt)
	if err != nil {
		return fmt.Errorf("no cached list at %s and the ban list at %s is unreachable: %w", o.Cache, o.From, err)
	}
	go keepCache(ctx, l, o.Cache, o.Log)
	return Serve(l, in, out, o.Now, o.Log)
}

// keepCache saves the list whenever it changed.
func keepCache(ctx context.Context, l *policies.BanList, path string, log *slog.Logger) {
	saved := ^uint64(0)
	tick.Now(ctx, time.Second, func() bool {
		if v := l.Version(); v != saved {
			if err := SaveCache(l, path); err != nil {
				log.Warn("strfry-policy: saving the cache", "err", err)
			} else {
				saved = v
			}
		}
		return true
	})
}
