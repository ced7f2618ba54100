package strfry

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/outpost-relay/outpost/internal/ops/atomicfile"
	"github.com/outpost-relay/outpost/policies"
)

// The cache file is a log of the followed list, one JSON record a line:
//
//	{"b":"<hex>","r":"<reason>","e":<expires_at>}   a ban (e left out: for good)
//	{"u":"<hex>"}                                   a ban lifted
//	{"w":["<word>",…]}                              the blocked words, all of them
//
// Read in order, the lines give the list. A change is appended as it is
// made, so a change costs its own line, not the list; the log is
// compacted (the list written anew, atomically: internal/ops/atomicfile)
// after a whole list is taken and whenever its lines outnumber the bans.
// A kill -9 can only tear the last line: a line that does not end, or is
// not a record, ends the log there, and is cut off before the next append.
type record struct {
	Ban   string   `json:"b,omitempty"`
	Why   string   `json:"r,omitempty"`
	Until int64    `json:"e,omitempty"`
	Unban string   `json:"u,omitempty"`
	Words []string `json:"w"`
}

// MarshalJSON leaves w out of the records that are not words (a list of
// no words is still written, as []).
func (r record) MarshalJSON() ([]byte, error) {
	type plain record
	if r.Words == nil {
		return json.Marshal(struct {
			plain
			Words []string `json:"w,omitempty"`
		}{plain: plain(r)})
	}
	return json.Marshal(plain(r))
}

// loadBatch is how many bans are put at a time while loading.
const loadBatch = 10_000

// loadCache fills l from the cache file at path; a missing file is no
// error (found false). It reads up to the first torn or unreadable line,
// and says how many bytes it took (good).
func loadCache(l *policies.BanList, path string) (found bool, good int64, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var bans []policies.Ban
	flush := func() {
		l.BanMany(bans)
		bans = bans[:0]
	}
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			break // no record is that long: garbage
		}
		var rec record
		if err != nil || json.Unmarshal(line, &rec) != nil {
			break // the end, or a torn tail
		}
		good += int64(len(line))
		switch {
		case rec.Ban != "":
			if bans = append(bans, policies.Ban{PubKey: rec.Ban, Reason: rec.Why, ExpiresAt: rec.Until}); len(bans) == loadBatch {
				flush()
			}
		case rec.Unban != "":
			flush()
			l.Unban(rec.Unban)
		case rec.Words != nil:
			l.SetWords(rec.Words)
		}
	}
	flush()
	return good > 0, good, nil
}

// cacheFile is a followed list kept in the cache file: a policies.Mirror
// that applies each change to the list and appends it to the file. Only
// the follower calls it, one change at a time.
type cacheFile struct {
	l     *policies.BanList
	path  string
	log   *slog.Logger
	f     *os.File // the log, open for appending; nil until compacted after a failure
	w     *bufio.Writer
	lines int // written since the last compaction
	bans  int // held at the last compaction
}

// openCache loads the cache file at path into l, cuts off a torn tail and
// opens it for appending.
func openCache(l *policies.BanList, path string, log *slog.Logger) (*cacheFile, bool, error) {
	c := &cacheFile{l: l, path: path, log: log}
	found, good, err := loadCache(l, path)
	if err != nil {
		return c, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return c, found, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		err = f.Truncate(good) // a torn tail would glue itself to the next line
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return c, found, err
	}
	c.f, c.w = f, bufio.NewWriter(f)
	c.bans = l.Len()
	return c, found, nil
}

// Close closes the file.
func (c *cacheFile) Close() error {
	if c.f == nil {
		return nil
	}
	return errors.Join(c.w.Flush(), c.f.Close())
}

// append writes records at the end of the log, as one write when they
// fit its buffer, compacting it once its lines outnumber the bans. A log
// that cannot be written is compacted at the next chance: the list is
// whole in memory, and written out whole then.
func (c *cacheFile) append(recs ...record) {
	if c.f == nil {
		c.compact()
		return
	}
	enc := json.NewEncoder(c.w)
	var err error
	for _, r := range recs {
		err = errors.Join(err, enc.Encode(r))
	}
	if err = errors.Join(err, c.w.Flush()); err != nil {
		c.log.Warn("strfry-policy: the cache file could not be written; it is rewritten at the next change", "err", err)
		c.f.Close()
		c.f = nil
		return
	}
	if c.lines += len(recs); c.lines > c.bans+loadBatch {
		c.compact()
	}
}

// compact writes the list anew in place of the log, atomically: a kill at
// any moment leaves the old log or the new one.
func (c *cacheFile) compact() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	bans := 0
	err := atomicfile.Write(c.path, 0o600, func(w io.Writer) error {
		var line []byte
		reasons := map[string][]byte{} // JSON of each reason, made once: a wave's bans share one
		err := c.l.EachBan(time.Now().Unix(), func(b policies.Ban) error {
			bans++
			line = appendBan(line[:0], b, reasons)
			_, err := w.Write(line)
			return err
		})
		return errors.Join(err, json.NewEncoder(w).Encode(record{Words: c.l.Words()}))
	})
	if err == nil {
		c.f, err = os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND, 0o600)
	}
	if err != nil {
		c.log.Warn("strfry-policy: the cache file could not be written; it is rewritten at the next change", "err", err)
		return
	}
	c.w = bufio.NewWriterSize(c.f, 64<<10)
	c.lines, c.bans = 0, bans
}

// appendBan appends the record line of b, as json.Encoder would write
// record{Ban, Why, Until}, without its reflection and garbage: the whole
// list is written so at every compaction.
func appendBan(line []byte, b policies.Ban, reasons map[string][]byte) []byte {
	line = append(append(append(line, `{"b":"`...), b.PubKey...), '"')
	if b.Reason != "" {
		r, ok := reasons[b.Reason]
		if !ok {
			r, _ = json.Marshal(b.Reason)
			reasons[b.Reason] = r
		}
		line = append(append(line, `,"r":`...), r...)
	}
	if b.ExpiresAt != 0 {
		line = strconv.AppendInt(append(line, `,"e":`...), b.ExpiresAt, 10)
	}
	return append(line, "}\n"...)
}

func (c *cacheFile) Ban(b policies.Ban) {
	c.l.Ban(b)
	c.append(record{Ban: b.PubKey, Why: b.Reason, Until: b.ExpiresAt})
}

// BanMany applies a page of changes' bans, appended to the log at once.
func (c *cacheFile) BanMany(bans []policies.Ban) {
	c.l.BanMany(bans)
	recs := make([]record, len(bans))
	for i, b := range bans {
		recs[i] = record{Ban: b.PubKey, Why: b.Reason, Until: b.ExpiresAt}
	}
	c.append(recs...)
}

func (c *cacheFile) Unban(pk string) {
	c.l.Unban(pk)
	c.append(record{Unban: pk})
}

// A whole list is written by the compaction at its end, not line by line:
// until then the log holds the list before it.
func (c *cacheFile) BeginBans()                  { c.l.BeginBans() }
func (c *cacheFile) PutBans(page []policies.Ban) { c.l.PutBans(page) }
func (c *cacheFile) EndBans() {
	c.l.EndBans()
	c.compact()
}

func (c *cacheFile) Words() []string { return c.l.Words() }

func (c *cacheFile) SetWords(words []string) {
	c.l.SetWords(words)
	c.append(record{Words: words})
}

var _ policies.Mirror = (*cacheFile)(nil)
