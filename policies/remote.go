package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/pubkey"
)

// SyncOptions tune SyncBanList; the zero value is usable.
type SyncOptions struct {
	Interval time.Duration // between polls; default 30s
	Client   *http.Client  // default: a client with a 10s timeout
	Log      *slog.Logger  // default: slog.Default()
}

// maxListBytes caps a fetched list (100,000 bans are about 15 MB of JSON).
const maxListBytes = 64 << 20

// SyncBanList returns a BanList that follows the public ban list of a remote
// outpost, e.g. SyncBanList(ctx, "https://outpost.example/banlist", ...). It
// fetches GET /blocked/pubkeys and GET /blocked/words once, failing if that
// does not work, then polls both with If-None-Match until ctx ends, keeping
// the last good lists when the remote is unreachable.
func SyncBanList(ctx context.Context, baseURL string, opt SyncOptions) (*BanList, error) {
	if opt.Interval <= 0 {
		opt.Interval = 30 * time.Second
	}
	if opt.Client == nil {
		opt.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	s := &syncer{base: strings.TrimSuffix(baseURL, "/"), opt: opt, list: NewBanList()}
	if err := s.poll(ctx); err != nil {
		return nil, err
	}
	go func() {
		t := time.NewTicker(opt.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.poll(ctx); err != nil && ctx.Err() == nil {
					s.opt.Log.Warn("ban list sync failed; keeping the last lists", "url", s.base, "err", err)
				}
			}
		}
	}()
	return s.list, nil
}

type syncer struct {
	base                  string
	opt                   SyncOptions
	list                  *BanList
	pubkeysETag, wordsTag string
}

func (s *syncer) poll(ctx context.Context) error {
	var keys struct {
		PubKeys []struct {
			PubKey    string `json:"pubkey"`
			Reason    string `json:"reason"`
			ExpiresAt *int64 `json:"expires_at"`
		} `json:"pubkeys"`
	}
	changed, err := s.get(ctx, "/blocked/pubkeys", &s.pubkeysETag, &keys)
	if err != nil {
		return err
	}
	if changed {
		bans := make([]Ban, 0, len(keys.PubKeys))
		for _, k := range keys.PubKeys {
			hex, err := pubkey.Parse(k.PubKey)
			if err != nil {
				s.opt.Log.Warn("ban list sync: skipping a bad pubkey", "pubkey", k.PubKey, "err", err)
				continue
			}
			b := Ban{PubKey: hex, Reason: k.Reason}
			if k.ExpiresAt != nil {
				b.ExpiresAt = *k.ExpiresAt
			}
			bans = append(bans, b)
		}
		s.list.SetBans(bans)
	}
	var words struct {
		Words []string `json:"words"`
	}
	changed, err = s.get(ctx, "/blocked/words", &s.wordsTag, &words)
	if err != nil {
		return err
	}
	if changed {
		s.list.SetWords(words.Words)
	}
	return nil
}

// get fetches path into v unless the remote answers 304 to the last ETag.
func (s *syncer) get(ctx context.Context, path string, etag *string, v any) (changed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return false, err
	}
	if *etag != "" {
		req.Header.Set("If-None-Match", *etag)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.opt.Client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return false, nil
	case http.StatusOK:
	default:
		return false, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListBytes)).Decode(v); err != nil {
		return false, fmt.Errorf("GET %s: %w", path, err)
	}
	*etag = resp.Header.Get("ETag")
	return true, nil
}
