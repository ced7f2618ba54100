package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/outbound"
	"github.com/outpost-relay/outpost/internal/tick"
	"github.com/outpost-relay/outpost/pubkey"
)

// SyncOptions tune SyncBanList; the zero value is usable.
type SyncOptions struct {
	Interval time.Duration // between polls; default 30s
	Client   *http.Client  // default: a client with a 10s timeout
	Log      *slog.Logger  // default: slog.Default()
	// List, when set, is followed instead of a new list: one filled from a
	// cache, say. A first fetch that fails is then not fatal; the list
	// keeps what it holds until the remote answers.
	List *BanList
}

// maxListBytes caps a fetched list (100,000 bans are about 15 MB of JSON).
const maxListBytes = 64 << 20

// Mirror is what a followed ban list is applied to: a BanList, or a store
// that keeps one (package banlist, whose follower mirrors a primary's list).
type Mirror interface {
	Ban(b Ban)
	Unban(pubkey string)
	SetBans(bans []Ban)
	Words() []string
	SetWords(words []string)
}

// SyncBanList returns a BanList that follows the public ban list of a remote
// outpost, e.g. SyncBanList(ctx, "https://outpost.example/banlist", ...); the
// outpost's own base URL ("https://outpost.example") works too: its index
// names the ban list's mount (see locate). It fetches GET /blocked/pubkeys and GET /blocked/words once, failing if that
// does not work, then polls both until ctx ends for the changes since the
// last answer (?since=<cursor>; with If-None-Match against a remote that
// gives no cursor), keeping the last good lists when the remote is
// unreachable.
func SyncBanList(ctx context.Context, baseURL string, opt SyncOptions) (*BanList, error) {
	list := opt.List
	if list == nil {
		list = NewBanList()
	}
	s := newSyncer(baseURL, list, opt)
	if err := s.sync(ctx); err != nil {
		if opt.List == nil {
			return nil, err
		}
		s.opt.Log.Warn("ban list sync failed; keeping the list given", "url", s.base, "err", err)
	}
	go s.run(ctx)
	return list, nil
}

// Follow applies the remote ban list to m as SyncBanList does, until ctx
// ends: the whole list first, then its changes. A remote that cannot be
// reached is tried again each interval, m keeping what it holds.
func Follow(ctx context.Context, baseURL string, m Mirror, opt SyncOptions) {
	s := newSyncer(baseURL, m, opt)
	if err := s.sync(ctx); err != nil && ctx.Err() == nil {
		s.opt.Log.Warn("ban list sync failed; keeping the last lists", "url", s.base, "err", err)
	}
	s.run(ctx)
}

func newSyncer(baseURL string, m Mirror, opt SyncOptions) *syncer {
	if opt.Interval <= 0 {
		opt.Interval = 30 * time.Second
	}
	if opt.Client == nil {
		opt.Client = outbound.Client(10 * time.Second)
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	return &syncer{base: strings.TrimSuffix(baseURL, "/"), opt: opt, list: m}
}

// run polls until ctx ends.
func (s *syncer) run(ctx context.Context) {
	tick.Every(ctx, s.opt.Interval, func() bool {
		if err := s.sync(ctx); err != nil && ctx.Err() == nil {
			s.opt.Log.Warn("ban list sync failed; keeping the last lists", "url", s.base, "err", err)
		}
		return true
	})
}

type syncer struct {
	base                  string
	opt                   SyncOptions
	list                  Mirror
	pubkeysETag, wordsTag string
	// Cursors of the last answers: with them, polls ask only for changes
	// (?since=); empty when the remote gives none (an older outpost).
	keysCursor, wordsCursor string
}

type remoteEntry struct {
	PubKey    string `json:"pubkey"`
	Reason    string `json:"reason"`
	ExpiresAt *int64 `json:"expires_at"`
}

func (s *syncer) poll(ctx context.Context) error {
	if err := s.pollKeys(ctx); err != nil {
		return err
	}
	return s.pollWords(ctx)
}

// pollKeys applies the changes since the last answer, or fetches the whole
// list when there is no cursor or the remote forgot it (410).
func (s *syncer) pollKeys(ctx context.Context) error {
	if s.keysCursor != "" {
		var d struct {
			Added, Expired []remoteEntry
			Lifted         []remoteEntry
			Cursor         string
		}
		status, err := s.get(ctx, "/blocked/pubkeys?since="+url.QueryEscape(s.keysCursor), nil, &d)
		if err != nil {
			return err
		}
		if status == http.StatusOK {
			for _, e := range d.Added {
				if b, ok := s.ban(e); ok {
					s.list.Ban(b)
				}
			}
			for _, e := range append(d.Lifted, d.Expired...) {
				if hex, err := pubkey.Parse(e.PubKey); err == nil {
					s.list.Unban(hex)
				}
			}
			s.keysCursor = d.Cursor
			return nil
		}
	}
	var full struct {
		PubKeys []remoteEntry `json:"pubkeys"`
		Cursor  string        `json:"cursor"`
	}
	status, err := s.get(ctx, "/blocked/pubkeys", &s.pubkeysETag, &full)
	if err != nil || status == http.StatusNotModified {
		return err
	}
	bans := make([]Ban, 0, len(full.PubKeys))
	for _, e := range full.PubKeys {
		if b, ok := s.ban(e); ok {
			bans = append(bans, b)
		}
	}
	s.list.SetBans(bans)
	s.keysCursor = full.Cursor
	return nil
}

func (s *syncer) ban(e remoteEntry) (Ban, bool) {
	hex, err := pubkey.Parse(e.PubKey)
	if err != nil {
		s.opt.Log.Warn("ban list sync: skipping a bad pubkey", "pubkey", e.PubKey, "err", err)
		return Ban{}, false
	}
	b := Ban{PubKey: hex, Reason: e.Reason}
	if e.ExpiresAt != nil {
		b.ExpiresAt = *e.ExpiresAt
	}
	return b, true
}

// pollWords is pollKeys for the blocked words.
func (s *syncer) pollWords(ctx context.Context) error {
	if s.wordsCursor != "" {
		var d struct {
			Added, Removed []string
			Cursor         string
		}
		status, err := s.get(ctx, "/blocked/words?since="+url.QueryEscape(s.wordsCursor), nil, &d)
		if err != nil {
			return err
		}
		if status == http.StatusOK {
			if len(d.Added)+len(d.Removed) > 0 {
				gone := map[string]bool{}
				for _, w := range d.Removed {
					gone[NormalizeText(w)] = true
				}
				words := d.Added
				for _, w := range s.list.Words() {
					if !gone[NormalizeText(w)] {
						words = append(words, w)
					}
				}
				s.list.SetWords(words)
			}
			s.wordsCursor = d.Cursor
			return nil
		}
	}
	var full struct {
		Words  []string `json:"words"`
		Cursor string   `json:"cursor"`
	}
	status, err := s.get(ctx, "/blocked/words", &s.wordsTag, &full)
	if err != nil || status == http.StatusNotModified {
		return err
	}
	s.list.SetWords(full.Words)
	s.wordsCursor = full.Cursor
	return nil
}

// sync polls, and when the base serves no ban list, looks for it once more
// (the outpost may have been down when the plugin started on its cache).
func (s *syncer) sync(ctx context.Context) error {
	err := s.poll(ctx)
	if err != nil && s.locate(ctx) {
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
	if _, err := s.get(ctx, "/", nil, &index); err != nil {
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

// get fetches path into v. With an ETag it may answer 304; a delta whose
// cursor the remote forgot answers 410, which the caller takes as "fetch
// the whole list".
func (s *syncer) get(ctx context.Context, path string, etag *string, v any) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return 0, err
	}
	if etag != nil && *etag != "" {
		req.Header.Set("If-None-Match", *etag)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.opt.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified, http.StatusGone:
		return resp.StatusCode, nil
	case http.StatusOK:
	default:
		return 0, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListBytes)).Decode(v); err != nil {
		return 0, fmt.Errorf("GET %s: %w", path, err)
	}
	if etag != nil {
		*etag = resp.Header.Get("ETag")
	}
	return http.StatusOK, nil
}
