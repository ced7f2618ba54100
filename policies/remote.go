package policies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/guard/outbound"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// SyncOptions tune SyncBanList and Follow; the zero value is usable.
type SyncOptions struct {
	Interval time.Duration // between polls; default 30s. After a failure the wait grows (see backoff)
	Timeout  time.Duration // of each request, its body read to the end included; default 10s
	Client   *http.Client  // default: http.DefaultClient (Timeout bounds each request)
	Log      *slog.Logger  // default: slog.Default()
	// List, when set, is followed instead of a new list: one filled from a
	// cache, say. A first fetch that fails is then not fatal; the list
	// keeps what it holds until the remote answers.
	List *BanList
	// Health, when set, records how the syncs go (for a health report).
	Health *SyncHealth
	Now    func() time.Time // the clock Health is kept by; default time.Now
	// PageSize is the bans asked for in one page, of the whole list and of
	// its changes; default (and the most an outpost gives) 10,000.
	PageSize int
}

// Mirror is what a followed ban list is applied to: a BanList, or a store
// that keeps one (package banlist, whose follower mirrors a primary's list).
type Mirror interface {
	Ban(b Ban)
	// BanMany applies the bans of a page of changes at once.
	BanMany(bans []Ban)
	Unban(pubkey string)
	// A whole list of bans is taken page by page, as it arrives: BeginBans,
	// PutBans for each page, EndBans after the last, which lifts the bans
	// held that the list did not name. A ban held before and named again
	// must stay enforced throughout. A fetch that fails part-way ends
	// without EndBans: what was held stays, with what was put, until the
	// next BeginBans starts over.
	BeginBans()
	PutBans(page []Ban)
	EndBans()
	Words() []string
	SetWords(words []string)
}

// SyncBanList returns a BanList that follows the public ban list of a remote
// outpost, e.g. SyncBanList(ctx, "https://outpost.example/banlist", ...); the
// outpost's own base URL ("https://outpost.example") works too: its index
// names the ban list's mount (see locate). It fetches GET /blocked/pubkeys
// and GET /blocked/words once, failing if that does not work, then polls
// both until ctx ends for the changes since the last answer
// (?since=<cursor>; with If-None-Match against a remote that gives no
// cursor). It keeps the last good lists while the remote is unreachable or
// answers what is not a ban list, polling less often meanwhile (backoff),
// and starts over from the whole lists when another server (Identity)
// answers at the URL.
func SyncBanList(ctx context.Context, baseURL string, opt SyncOptions) (*BanList, error) {
	list := opt.List
	if list == nil {
		list = NewBanList()
	}
	s := newSyncer(baseURL, list, opt)
	if err := s.attempt(ctx); err != nil && opt.List == nil {
		return nil, err
	}
	go s.run(ctx)
	return list, nil
}

// Follow applies the remote ban list to m as SyncBanList does, until ctx
// ends: the whole list first, then its changes. A remote that cannot be
// reached, or answers what is not a ban list, is tried again after a
// growing wait (backoff), m keeping what it holds.
func Follow(ctx context.Context, baseURL string, m Mirror, opt SyncOptions) {
	f := NewFollower(baseURL, m, opt)
	f.Sync(ctx)
	f.Run(ctx)
}

// Follower applies a remote ban list to a Mirror, for who must know how
// the first sync went before following on (opt.List is not used).
type Follower struct{ s *syncer }

// NewFollower is a follower of the ban list at baseURL applied to m.
func NewFollower(baseURL string, m Mirror, opt SyncOptions) *Follower {
	return &Follower{newSyncer(baseURL, m, opt)}
}

// Sync syncs once: the whole list the first time, its changes after.
func (f *Follower) Sync(ctx context.Context) error { return f.s.attempt(ctx) }

// Run syncs every interval (less often while the remote fails) until ctx
// ends.
func (f *Follower) Run(ctx context.Context) { f.s.run(ctx) }

func newSyncer(baseURL string, m Mirror, opt SyncOptions) *syncer {
	if opt.Interval <= 0 {
		opt.Interval = 30 * time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	if opt.Client == nil {
		opt.Client = outbound.Client(opt.Timeout)
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Health == nil {
		opt.Health = new(SyncHealth)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.PageSize <= 0 {
		opt.PageSize = maxPage
	}
	s := &syncer{base: strings.TrimSuffix(baseURL, "/"), opt: opt, list: m}
	s.keys = feed{path: "/blocked/pubkeys", whole: "pubkeys", paged: true, apply: s.applyKeys}
	s.words = feed{path: "/blocked/words", whole: "words", words: true, apply: s.applyWords}
	return s
}

// run polls until ctx ends: every interval while the remote answers, less
// and less often while it fails (backoff), back to every interval after
// an answer.
func (s *syncer) run(ctx context.Context) {
	for {
		wait := s.opt.Interval
		if s.failures > 0 {
			wait = backoff(s.opt.Interval, s.failures)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		s.attempt(ctx)
	}
}

// attempt syncs once, recording the outcome in s.opt.Health.
func (s *syncer) attempt(ctx context.Context) error {
	s.opt.Health.begin(s.opt.Now())
	err := s.sync(ctx)
	if ctx.Err() != nil {
		return err // stopping: not the remote's failure
	}
	s.opt.Health.end(s.opt.Now(), err)
	if err == nil {
		s.failures = 0
		return nil
	}
	s.failures++
	s.opt.Log.Warn("ban list sync failed; keeping the last lists", "url", s.base, "err", err, "failures_in_a_row", s.failures)
	return err
}

type syncer struct {
	base        string
	opt         SyncOptions
	list        Mirror
	keys, words feed
	failures    int // in a row
}

// feed is one of the remote's lists and where this follower is in it.
type feed struct {
	path  string
	whole string // the array of the whole list's answer
	words bool
	paged bool // the whole list is fetched in pages (getWhole)
	apply func(a *listAnswer, whole bool)
	// Of the last answer: with a cursor, polls ask only for changes
	// (?since=); without one (an older outpost), with If-None-Match. A
	// cursor is only asked of the identity that issued it.
	cursor, etag string
	from         Identity
}

type remoteEntry struct {
	PubKey    string `json:"pubkey"`
	Reason    string `json:"reason"`
	ExpiresAt *int64 `json:"expires_at"`
}

func (s *syncer) poll(ctx context.Context) error {
	if err := s.pollFeed(ctx, &s.keys); err != nil {
		return err
	}
	return s.pollFeed(ctx, &s.words)
}

// pollFeed applies the changes since the last answer, or the whole list
// when there is no cursor, the remote forgot it (410), or another server
// answers now (its identity differs from the cursor's): the whole list
// then replaces what this follower holds, dropping what the new server
// does not have.
func (s *syncer) pollFeed(ctx context.Context, f *feed) error {
	if f.cursor != "" {
		a, status, err := s.takeChanges(ctx, f)
		if err != nil {
			return err
		}
		if status == http.StatusOK && a.Identity == f.from {
			f.cursor = a.Cursor
			return nil
		}
		if status == http.StatusOK {
			s.opt.Log.Warn("another server answers at the ban list's URL; fetching its whole list", "url", s.base+f.path,
				"was", f.from, "now", a.Identity)
		}
		f.cursor, f.etag, f.from = "", "", Identity{}
	}
	a, status, err := s.getWhole(ctx, f)
	if err != nil || status == http.StatusNotModified {
		return err
	}
	f.cursor, f.from = a.Cursor, a.Identity
	return nil
}

// maxPage is the most bans an outpost gives in one page.
const maxPage = 10_000

// limit is the ?limit= of a page.
func (s *syncer) limit() string { return "?limit=" + strconv.Itoa(s.opt.PageSize) }

// getWhole fetches f's whole list and applies it: in pages when f is
// paged (takePages). An outpost that does not page answers the whole list
// to the first request (with no next).
func (s *syncer) getWhole(ctx context.Context, f *feed) (*listAnswer, int, error) {
	path := f.path
	if f.paged {
		path += s.limit()
	}
	a, status, err := s.get(ctx, path, &f.etag, f.words, f.whole)
	if err != nil || status != http.StatusOK {
		return a, status, err
	}
	if !f.paged {
		f.apply(a, true)
		return a, status, nil
	}
	if err := s.takePages(ctx, f, a); err != nil {
		f.etag = "" // the list was not all taken: a 304 to this ETag would say it was
		return nil, 0, err
	}
	return a, status, nil
}

// takePages applies the whole list of keys whose first page is first, a
// page at a time as each arrives, so a follower holds a page or two of the
// answer, never the list (Mirror: BeginBans, PutBans, EndBans). Each page
// is applied while the next is fetched: the remote makes a page while this
// follower applies the one before, where one waited for the other (at a
// million keys a plugin's start was the sum of the two, about 4.5 s each).
// Every page must come from the server of the first, each page after the
// one before.
func (s *syncer) takePages(ctx context.Context, f *feed, first *listAnswer) error {
	type fetched struct {
		a      *listAnswer
		status int
		err    error
	}
	s.list.BeginBans()
	page, taken := first, 0
	for {
		taken += len(page.Entries)
		after := page.Next
		var next chan fetched
		if after != "" {
			next = make(chan fetched, 1)
			go func() {
				a, status, err := s.get(ctx, f.path+s.limit()+"&after="+url.QueryEscape(after), nil, f.words, f.whole)
				next <- fetched{a, status, err}
			}()
		}
		s.list.PutBans(s.keptBans(page.Entries))
		page.Entries = nil
		if next == nil {
			break
		}
		r := <-next
		switch {
		case r.err != nil:
			return r.err
		case r.status != http.StatusOK || r.a.Identity != first.Identity:
			return fmt.Errorf("GET %s: the list changed servers while it was paged", f.path)
		case r.a.Next != "" && r.a.Next <= after, taken+len(r.a.Entries) > maxSnapshot:
			return fmt.Errorf("GET %s: the pages do not end (over %d bans, or a page that goes back)", f.path, maxSnapshot)
		}
		page = r.a
	}
	s.list.EndBans()
	return nil
}

// takeChanges applies the changes since f's cursor, unless another server
// answers (its answer is returned, unapplied) or the cursor is forgotten
// (410). Those of a paged feed are asked for in pages, each applied as it
// arrives, so a wave of bans is never one answer; an older outpost answers
// them all to the first request (with no next). The first page's cursor is
// the one to keep: a change made while the pages were read is in a later
// page or in the next changes since it.
func (s *syncer) takeChanges(ctx context.Context, f *feed) (*listAnswer, int, error) {
	path := f.path + "?since=" + url.QueryEscape(f.cursor)
	if f.paged {
		path += "&limit=" + strconv.Itoa(s.opt.PageSize)
	}
	first, status, err := s.get(ctx, path, nil, f.words, "added")
	if err != nil || status != http.StatusOK || first.Identity != f.from {
		return first, status, err
	}
	page, taken := first, 0
	for {
		taken += len(page.Entries) + len(page.Gone)
		f.apply(page, false)
		page.Entries, page.Gone = nil, nil
		if page.Next == "" {
			return first, status, nil
		}
		after := page.Next
		next, status, err := s.get(ctx, path+"&after="+url.QueryEscape(after), nil, f.words, "added")
		switch {
		case err != nil:
			return nil, 0, err
		case status != http.StatusOK || next.Identity != first.Identity:
			return nil, 0, fmt.Errorf("GET %s: the list changed servers, or forgot the cursor, while its changes were paged", f.path)
		case next.Next != "" && next.Next <= after, taken+len(next.Entries)+len(next.Gone) > maxSnapshot:
			return nil, 0, fmt.Errorf("GET %s: the pages of changes do not end (over %d, or a page that goes back)", f.path, maxSnapshot)
		}
		page = next
	}
}

// applyKeys applies the changes of /blocked/pubkeys (a whole list is
// taken by takePages).
func (s *syncer) applyKeys(a *listAnswer, _ bool) {
	if bans := s.keptBans(a.Entries); len(bans) > 0 {
		s.list.BanMany(bans)
	}
	for _, b := range s.keptBans(a.Gone) {
		s.list.Unban(b.PubKey)
	}
}

// keptBans are the entries that name a key; the others are skipped, with one
// line in the log per answer however many there are. A key is checked for
// its form only, not for being on the curve: that check was four fifths
// of the CPU a plugin spends taking a whole list (BenchmarkStartWithoutCache
// in internal/nostr/strfry), and a key off the curve can sign no event, so
// its ban, held or stored, never matches anything.
func (s *syncer) keptBans(entries []remoteEntry) []Ban {
	bans := make([]Ban, 0, len(entries))
	var bad []string
	for _, e := range entries {
		hex, err := pubkey.ParseForLookup(e.PubKey)
		if err != nil {
			bad = append(bad, e.PubKey)
			continue
		}
		b := Ban{PubKey: hex, Reason: e.Reason}
		if e.ExpiresAt != nil {
			b.ExpiresAt = *e.ExpiresAt
		}
		bans = append(bans, b)
	}
	if len(bad) > 0 {
		s.opt.Log.Warn("ban list sync: skipping entries that name no public key", "url", s.base, "skipped", len(bad), "first", outpost.Echo(bad[0]))
	}
	return bans
}

// maxWordBytes bounds a blocked word taken from a remote: an outpost keeps
// none over 100 characters (banlist.MaxWordLen), 400 bytes in UTF-8.
const maxWordBytes = 400

// keptWords are those of ws an outpost could have sent; the others are
// skipped, with one line in the log per answer.
func (s *syncer) keptWords(ws []string) []string {
	out := ws[:0]
	for _, w := range ws {
		if len(w) <= maxWordBytes {
			out = append(out, w)
		}
	}
	if n := len(ws) - len(out); n > 0 {
		s.opt.Log.Warn("ban list sync: skipping blocked words over 400 bytes", "url", s.base, "skipped", n)
	}
	return out
}

// applyWords applies an answer of /blocked/words: the whole list, or
// changes.
func (s *syncer) applyWords(a *listAnswer, whole bool) {
	added := s.keptWords(a.Words)
	if whole {
		s.list.SetWords(added)
		return
	}
	if len(added)+len(a.Removed) == 0 {
		return
	}
	gone := map[string]bool{}
	for _, w := range a.Removed {
		gone[NormalizeText(w)] = true
	}
	words := added
	for _, w := range s.list.Words() {
		if !gone[NormalizeText(w)] {
			words = append(words, w)
		}
	}
	s.list.SetWords(words)
}

// sync polls, and when the base serves no ban list (404), looks for it
// once more (the outpost may have been down when the plugin started on its
// cache).
func (s *syncer) sync(ctx context.Context) error {
	err := s.poll(ctx)
	if code, _ := errors.AsType[statusError](err); code == http.StatusNotFound && s.locate(ctx) {
		err = s.poll(ctx)
	}
	return err
}

// locate makes s.base the ban list's URL when it is the outpost's own base
// URL, and says whether it did: people type the server's address, and the
// ban list may be mounted anywhere (OUTPOST_BANLIST_MOUNT). An outpost
// answers GET / with an index whose services.banlist is the list's public
// URL; its path is taken onto the address given, which is the one this
// machine can reach. Asked only when the base serves no ban list.
func (s *syncer) locate(ctx context.Context) bool {
	var index struct {
		Services struct {
			Banlist string `json:"banlist"`
		} `json:"services"`
	}
	err := s.do(ctx, "/", nil, func(body io.Reader) error {
		// An index is small: read as one element.
		return json.NewDecoder(&boundedBody{r: body, max: maxElementBytes}).Decode(&index)
	})
	if err != nil {
		return false
	}
	list, err := url.Parse(index.Services.Banlist)
	if err != nil || strings.Trim(list.Path, "/") == "" {
		return false
	}
	s.opt.Log.Info("ban list found through the outpost's index", "from", s.base, "banlist", s.base+list.Path)
	s.base += strings.TrimSuffix(list.Path, "/")
	return true
}

// get fetches a list answer from path: a delta (etag nil), which may
// answer 410 when the remote forgot the cursor (the caller then fetches
// the whole list), or the whole list, which may answer 304 when an ETag
// was sent. Any other status, or these where they make no sense (a 304 to
// no ETag, a 410 to a whole list), is a failure.
func (s *syncer) get(ctx context.Context, path string, etag *string, words bool, list string) (a *listAnswer, status int, err error) {
	err = s.do(ctx, path, etag, func(body io.Reader) (err error) {
		a, err = decodeList(body, words, list)
		return err
	})
	code, _ := errors.AsType[statusError](err)
	switch {
	case code == http.StatusGone && etag == nil, code == http.StatusNotModified && etag != nil && *etag != "":
		return nil, int(code), nil
	case err != nil:
		return nil, 0, err
	}
	s.opt.Health.seen(a.Identity)
	return a, http.StatusOK, nil
}

// statusError is an answer other than 200.
type statusError int

func (e statusError) Error() string { return http.StatusText(int(e)) }

// do GETs path and reads a 200's body with read, all under the request
// timeout: a remote that trickles or never stops is cut off there.
func (s *syncer) do(ctx context.Context, path string, etag *string, read func(io.Reader) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return err
	}
	if etag != nil && *etag != "" {
		req.Header.Set("If-None-Match", *etag)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.opt.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %w", path, statusError(resp.StatusCode))
	}
	if err := read(resp.Body); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if etag != nil {
		*etag = resp.Header.Get("ETag")
	}
	return nil
}
