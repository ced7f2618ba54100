package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders for DecodeConfig
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost/probe"
	"golang.org/x/sync/singleflight"
)

// A mint's icon_url is never loaded by the visitor's browser (that would
// tell the mint's operator who is looking at the mint): outpost fetches it
// with the prober's SSRF-guarded client and serves it from its own origin,
// if it is a small raster image.
//
// The bounds fit the logos mints really publish (often a 1,000–2,000 px PNG
// of a few hundred KiB from an image host); a smaller cap showed most of
// them as the placeholder.
const (
	maxIconBytes   = 1 << 20
	maxIconPixels  = 4096 // per side
	iconTimeout    = 5 * time.Second
	iconTTL        = time.Hour
	iconFailTTL    = 10 * time.Minute
	maxIconEntries = 1024
	iconFetches    = 4 // at once, over all mints
)

// iconTypes are the formats served, by what the bytes are (never by what
// the mint's server says). SVG is not among them: it is a document that can
// carry scripts.
var iconTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

type iconProxy struct {
	client *probe.Client
	now    func() time.Time
	group  singleflight.Group
	slots  chan struct{}

	mu    sync.Mutex
	cache map[string]iconEntry // by icon URL
}

type iconEntry struct {
	body  []byte // nil: the fetch failed
	ctype string
	until time.Time
}

func newIconProxy(c *probe.Client, now func() time.Time) *iconProxy {
	return &iconProxy{client: c, now: now, slots: make(chan struct{}, iconFetches), cache: map[string]iconEntry{}}
}

// handleIcon serves the icon of a mint: the image, or a neutral placeholder
// when the mint's icon cannot be had.
func (p *Pages) handleIcon(w http.ResponseWriter, r *http.Request) {
	var meta struct {
		IconURL *string `json:"icon_url"`
	}
	if err := p.mintdir.get(r, "/mints/"+url.PathEscape(chi.URLParam(r, "id"))+"/metadata", &meta); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			http.NotFound(w, r)
			return
		}
		p.log.WarnContext(r.Context(), "icon: mint metadata", "err", err)
	}
	var e iconEntry
	if meta.IconURL != nil {
		e = p.icons.get(r.Context(), *meta.IconURL)
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if e.body == nil {
		a := assets["mint.svg"]
		h.Set("Content-Type", a.ctype)
		h.Set("Cache-Control", "public, max-age=600")
		w.Write(a.body)
		return
	}
	h.Set("Content-Type", e.ctype)
	h.Set("Content-Length", strconv.Itoa(len(e.body)))
	h.Set("Cache-Control", "public, max-age=3600")
	w.Write(e.body)
}

// get returns the icon at raw, fetched at most once per TTL however many
// pages ask for it at once.
func (ip *iconProxy) get(ctx context.Context, raw string) iconEntry {
	now := ip.now()
	ip.mu.Lock()
	e, ok := ip.cache[raw]
	ip.mu.Unlock()
	if ok && now.Before(e.until) {
		return e
	}
	v, _, _ := ip.group.Do(raw, func() (any, error) {
		// Detached from the request: the result is cached for everyone.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), iconTimeout)
		defer cancel()
		e := iconEntry{until: now.Add(iconFailTTL)}
		if body, ctype, err := ip.fetch(fctx, raw); err == nil {
			e = iconEntry{body: body, ctype: ctype, until: now.Add(iconTTL)}
		}
		ip.put(raw, e)
		return e, nil
	})
	return v.(iconEntry)
}

func (ip *iconProxy) put(raw string, e iconEntry) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if len(ip.cache) >= maxIconEntries {
		now := ip.now()
		for k, old := range ip.cache {
			if !now.Before(old.until) {
				delete(ip.cache, k)
			}
		}
		for k := range ip.cache { // still full: drop any one
			if len(ip.cache) < maxIconEntries {
				break
			}
			delete(ip.cache, k)
		}
	}
	ip.cache[raw] = e
}

// fetch reads an icon from an http(s) URL (through the guarded client) or a
// data: URL, and checks what it is.
func (ip *iconProxy) fetch(ctx context.Context, raw string) (body []byte, ctype string, err error) {
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") || base64.StdEncoding.DecodedLen(len(data)) > maxIconBytes {
			return nil, "", errors.New("icon: unsupported data URL")
		}
		if body, err = base64.StdEncoding.DecodeString(data); err != nil {
			return nil, "", err
		}
		return checkIcon(body)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, "", fmt.Errorf("icon: not an http(s) URL: %q", raw)
	}
	select {
	case ip.slots <- struct{}{}:
		defer func() { <-ip.slots }()
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	status, body, err := ip.client.Fetch(ctx, u.String(), "image/png, image/jpeg, image/gif, image/webp")
	if err != nil {
		return nil, "", err
	}
	if status != http.StatusOK {
		return nil, "", fmt.Errorf("icon: HTTP %d", status)
	}
	return checkIcon(body)
}

// checkIcon accepts a raster image of an allowed type and size.
func checkIcon(body []byte) ([]byte, string, error) {
	if len(body) == 0 || len(body) > maxIconBytes {
		return nil, "", errors.New("icon: empty or too large")
	}
	ctype := http.DetectContentType(body)
	if !iconTypes[ctype] {
		return nil, "", fmt.Errorf("icon: %s is not an allowed image type", ctype)
	}
	if ctype != "image/webp" { // no WebP decoder in the standard library; its size is capped above
		cfg, _, err := image.DecodeConfig(bytes.NewReader(body))
		if err != nil {
			return nil, "", fmt.Errorf("icon: %w", err)
		}
		if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxIconPixels || cfg.Height > maxIconPixels {
			return nil, "", fmt.Errorf("icon: %d×%d pixels", cfg.Width, cfg.Height)
		}
	}
	return body, ctype, nil
}
