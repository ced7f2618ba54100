package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/go-chi/chi/v5"
)

//go:embed static
var staticFS embed.FS

// asset is one embedded static file.
type asset struct {
	body  []byte
	ctype string
	hash  string // of body, in the URL pages link it by, so it can be cached for good
}

var assets = loadAssets()

func loadAssets() map[string]asset {
	types := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
		".svg": "image/svg+xml", ".png": "image/png"}
	out := map[string]asset{}
	entries, err := staticFS.ReadDir("static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		body, err := fs.ReadFile(staticFS, "static/"+e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		ctype, ok := types[path.Ext(e.Name())]
		if !ok {
			panic("web: no content type for static/" + e.Name())
		}
		out[e.Name()] = asset{body: body, ctype: ctype, hash: hex.EncodeToString(sum[:6])}
	}
	return out
}

// assetURL is the URL a page links an asset by. A name that is not embedded
// fails the template, so a typo cannot ship.
func assetURL(name string) (string, error) {
	a, ok := assets[name]
	if !ok {
		return "", fs.ErrNotExist
	}
	return staticPath + name + "?v=" + a.hash, nil
}

// handleAsset serves an embedded file; linked by its hash, it never changes.
// Scripts are ES modules: they import each other by plain URL, which the
// browser revalidates cheaply with the ETag.
func handleAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := assets[chi.URLParam(r, "file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", a.ctype)
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	etag := `"` + a.hash + `"`
	h.Set("ETag", etag)
	if r.URL.Query().Get("v") == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(a.body)
}
