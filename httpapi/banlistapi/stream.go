package banlistapi

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
)

// ndjsonType is the media type of the streamed list (and of bulk bans).
const ndjsonType = "application/x-ndjson"

// wantsStream reports whether a GET of the whole list asks for it as NDJSON:
// by Accept, or by ?format=ndjson for clients that cannot set headers.
func wantsStream(r *http.Request) bool {
	if r.URL.Query().Get("format") == "ndjson" {
		return true
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == ndjsonType {
			return true
		}
	}
	return false
}

// streamPage is how many bans are read at a time while streaming: the
// stream holds one such page, whatever the size of the list.
const streamPage = 1000

// streamWriteTimeout bounds the writing of one page of the stream: a
// reader that takes none of it for this long is cut off, so a hung client
// holds nothing but its connection, and not for long.
const streamWriteTimeout = 30 * time.Second

// streamEnd is the last line of a stream: a stream without it was cut
// short, and is not the whole list.
type streamEnd struct {
	End   bool `json:"end"`
	Count int  `json:"count"`
}

// streamList answers the whole list (from ?after= on) as NDJSON: a line of
// its issuer (the cursor to ask ?since= with once done, as of the first
// page), a line per ban in order of key, then streamEnd. It reads the list
// a page at a time, each page in a transaction of its own, so it costs one
// page of memory and holds no transaction while the reader is slow; a ban
// made meanwhile is in the stream or in the changes since its cursor, as
// with pages. An error after the first line can only cut the stream: the
// reader sees no end line.
func streamList(w http.ResponseWriter, r *http.Request, svc *banlist.Service, at time.Time) error {
	after := r.URL.Query().Get("after")
	if err := validAfter(after); err != nil {
		return err
	}
	if r.URL.Query().Has("limit") {
		return outpost.Errorf(outpost.Invalid, "invalid_limit", "the stream is the whole list from ?after= on: leave limit out, or ask for pages without the stream").With("field", "limit")
	}
	bans, next, err := svc.ActivePage(r.Context(), after, streamPage)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", ndjsonType)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil // the same answer without its body: no need to walk the list
	}
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.Encode(banlist.IssuerOf(svc, at))
	count := 0
	for {
		rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		for _, b := range bans {
			enc.Encode(banlist.BlockedPubKeyOf(b))
		}
		count += len(bans)
		if next == "" {
			break
		}
		if err := bw.Flush(); err != nil {
			return nil // the reader went away, or took too long: nothing more to say
		}
		if bans, next, err = svc.ActivePage(r.Context(), next, streamPage); err != nil {
			httpapi.LoggerFromContext(r.Context()).Warn("ban list stream cut short", "err", err)
			return nil
		}
	}
	enc.Encode(streamEnd{End: true, Count: count})
	bw.Flush()
	rc.SetWriteDeadline(time.Time{})
	return nil
}

// cachedListMax is the longest list whose whole answer (GET /blocked/pubkeys
// without paging) is kept encoded, for pollers with If-None-Match; a
// longer one is written out a page at a time (serveWhole): a million bans
// are 116 MB of JSON, which the cache kept besides its gzip.
var cachedListMax = 20_000

// serveWhole answers the whole list as one JSON object, as the cached
// answer does, written a page at a time from the snapshot so that it costs
// one page of memory. Its ETag names the list's state (the server, its
// version and its count of active bans, which a lapse changes) rather than
// a hash of a body it never holds.
func serveWhole(w http.ResponseWriter, r *http.Request, svc *banlist.Service, at time.Time) {
	l, epoch := svc.List(), svc.Identity().Epoch
	etag := fmt.Sprintf(`"%s-%d-%d"`, epoch[:min(8, len(epoch))], l.Version(), l.ActiveBans(at.Unix()))
	zipped, fresh := conditionalJSON(w, r, etag)
	if fresh {
		return
	}
	var out io.Writer = w
	if zipped {
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		defer zw.Close()
		out = zw
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(out, 64<<10)
	defer bw.Flush()
	bw.WriteString(`{"pubkeys":[`)
	after, first := "", true
	for {
		rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		bans, next, err := svc.ActivePage(r.Context(), after, streamPage)
		if err != nil {
			return // the reader went away: the answer is cut, not valid JSON
		}
		for _, b := range bans {
			if !first {
				bw.WriteByte(',')
			}
			first = false
			e, _ := json.Marshal(banlist.BlockedPubKeyOf(b))
			bw.Write(e)
		}
		if next == "" {
			break
		}
		after = next
	}
	issuer, _ := json.Marshal(banlist.IssuerOf(svc, at))
	bw.WriteString("],")
	bw.Write(issuer[1:]) // the issuer's fields, and the closing brace
	rc.SetWriteDeadline(time.Time{})
}
