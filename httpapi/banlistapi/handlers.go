package banlistapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/wot"
	"github.com/outpost-relay/outpost/policies"
)

//go:embed openapi.json
var openAPI []byte

// --- public reads ---

// listCache holds an encoded public list. It is rebuilt only when the ban
// list changes or a temporary ban in it lapses, so relays polling with
// If-None-Match cost one comparison.
type listCache struct {
	mu         sync.Mutex
	version    uint64
	validUntil int64 // when the next listed ban lapses; 0: never
	built      bool
	body, gz   []byte
	etag       string
}

// get returns the encoding for version, calling build (which returns the
// value to encode and until when it is valid) when the cached one is stale.
func (c *listCache) get(version uint64, now int64, build func() (any, int64)) (body, gz []byte, etag string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.built || version != c.version || (c.validUntil != 0 && now >= c.validUntil) {
		v, validUntil := build()
		c.body, _ = json.Marshal(v)
		var zb bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&zb, gzip.BestSpeed)
		zw.Write(c.body)
		zw.Close()
		c.gz = zb.Bytes()
		sum := sha256.Sum256(c.body)
		c.etag = `"` + hex.EncodeToString(sum[:12]) + `"`
		c.version, c.validUntil, c.built = version, validUntil, true
	}
	return c.body, c.gz, c.etag
}

// serveCached answers with a cached JSON body, honouring If-None-Match and gzip.
func serveCached(w http.ResponseWriter, r *http.Request, body, gz []byte, etag string) {
	zipped, fresh := conditionalJSON(w, r, etag)
	if fresh {
		return
	}
	if zipped {
		body = gz
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// conditionalJSON sets the headers of a JSON answer with ETag etag: it
// answers 304 and reports fresh when the client holds it already, and
// otherwise reports whether the body is to be gzipped (Content-Encoding
// set).
func conditionalJSON(w http.ResponseWriter, r *http.Request, etag string) (zipped, fresh bool) {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return false, true
	}
	h.Set("Content-Type", "application/json")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		return true, false
	}
	return false, false
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

func handleBlockedList(svc *banlist.Service, now func() time.Time) http.HandlerFunc {
	var cache listCache
	return func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("since") {
			serveChanges(w, r, svc, false)
			return
		} else if wantsStream(r) {
			httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error { return streamList(w, r, svc, now()) })(w, r)
			return
		} else if q.Has("limit") || q.Has("after") {
			httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error { return servePage(w, r, svc, now()) })(w, r)
			return
		}
		l, at := svc.List(), now()
		if l.Len() > cachedListMax {
			serveWhole(w, r, svc, at)
			return
		}
		body, gz, etag := cache.get(l.Version(), at.Unix(), func() (any, int64) {
			bans, next := l.Bans(at.Unix())
			return banlist.BlockedPubKeys{PubKeys: blockedEntries(bans), Issuer: banlist.IssuerOf(svc, at)}, next
		})
		serveCached(w, r, body, gz, etag)
	}
}

func blockedEntries(bans []policies.Ban) []banlist.BlockedPubKey {
	entries := make([]banlist.BlockedPubKey, len(bans))
	for i, b := range bans {
		entries[i] = banlist.BlockedPubKeyOf(b)
	}
	return entries
}

func handleBlockedWords(svc *banlist.Service, now func() time.Time) http.HandlerFunc {
	var cache listCache
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("since") {
			serveChanges(w, r, svc, true)
			return
		}
		l := svc.List()
		body, gz, etag := cache.get(l.Version(), 0, func() (any, int64) {
			return banlist.BlockedWords{Words: l.Words(), Issuer: banlist.IssuerOf(svc, now())}, 0
		})
		serveCached(w, r, body, gz, etag)
	}
}

// A cursor (banlist.Issuer) is the time of an answer, in unix
// milliseconds: ?since=<cursor> asks what changed after that answer.

type pubkeyChanges struct {
	Added   []banlist.BlockedPubKey `json:"added"`
	Lifted  []liftedEntry           `json:"lifted"`
	Expired []banlist.BlockedPubKey `json:"expired"`
	banlist.Issuer
}

type liftedEntry struct {
	PubKey string `json:"pubkey"`
}

type wordChanges struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	banlist.Issuer
}

// pagedChanges is a page of the keys' changes (?since= with ?limit or
// ?after).
type pagedChanges struct {
	pubkeyChanges
	Next string `json:"next,omitempty"` // the ?after= of the next page; absent on the last
}

// serveChanges answers ?since=<cursor>: the changes since that answer; of
// the keys, with ?limit or ?after, a page of them in order of key.
func serveChanges(w http.ResponseWriter, r *http.Request, svc *banlist.Service, words bool) {
	httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		if !words && (q.Has("limit") || q.Has("after")) {
			return serveChangesPage(w, r, svc)
		}
		c, err := svc.ChangesSince(r.Context(), q.Get("since"))
		if err != nil {
			return err
		}
		w.Header().Set("Cache-Control", "no-store")
		if words {
			return httpapi.Encode(w, http.StatusOK, wordChanges{Added: orEmpty(c.WordsAdded), Removed: orEmpty(c.WordsRemoved), Issuer: banlist.IssuerOf(svc, c.At)})
		}
		return httpapi.Encode(w, http.StatusOK, keyChanges(svc, c))
	}).ServeHTTP(w, r)
}

// serveChangesPage answers a page of the keys' changes since a cursor.
func serveChangesPage(w http.ResponseWriter, r *http.Request, svc *banlist.Service) error {
	q := r.URL.Query()
	after := q.Get("after")
	if err := validAfter(after); err != nil {
		return err
	}
	page, err := pageLimits.Parse(r)
	if err != nil {
		return err
	}
	c, next, err := svc.ChangesPageSince(r.Context(), q.Get("since"), after, page.Limit)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return httpapi.Encode(w, http.StatusOK, pagedChanges{pubkeyChanges: keyChanges(svc, c), Next: next})
}

func keyChanges(svc *banlist.Service, c banlist.Changes) pubkeyChanges {
	lifted := make([]liftedEntry, len(c.Lifted))
	for i, pk := range c.Lifted {
		lifted[i] = liftedEntry{PubKey: pubkey.NPub(pk)}
	}
	return pubkeyChanges{Added: blockedEntries(c.Added), Lifted: lifted, Expired: blockedEntries(c.Expired), Issuer: banlist.IssuerOf(svc, c.At)}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type banStatus struct {
	Blocked   bool   `json:"blocked"`
	Reason    string `json:"reason"`
	ExpiresAt *int64 `json:"expires_at"`
}

func handleBlockedStatus(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		// The hot path of relays asking about every author: a form check
		// only (see pubkey.ParseForLookup).
		pk, err := pubkey.ParseForLookup(httpapi.PathParam(r, "pubkey"))
		if err != nil {
			return outpost.Errorf(outpost.Invalid, "invalid_pubkey", "pubkey is not a valid public key (npub or 64-character hex)").With("field", "pubkey")
		}
		b, ok := svc.Status(pk)
		return httpapi.Encode(w, http.StatusOK, banStatus{Blocked: ok, Reason: b.Reason, ExpiresAt: banlist.UnixOrNil(b.ExpiresAt)})
	})
}

func parsePubKey(s, field string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", outpost.Errorf(outpost.Invalid, "invalid_request", "%s is required", field).With("field", field)
	}
	pk, err := pubkey.Parse(s)
	if err != nil {
		return "", outpost.Errorf(outpost.Invalid, "invalid_pubkey", "%s is not a valid public key (npub or 64-character hex)", field).With("field", field)
	}
	return pk, nil
}

// --- reports ---

type reportRequest struct {
	ReportedPubKey string   `json:"reported_pubkey"`
	Reason         string   `json:"reason"`
	EventIDs       []string `json:"event_ids"`
	Comment        string   `json:"comment"`
	pk             string
}

func (q *reportRequest) Valid() (err error) {
	q.pk, err = parsePubKey(q.ReportedPubKey, "reported_pubkey")
	return err
}

func handleReport(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[reportRequest](w, r)
		if err != nil {
			return err
		}
		rep, err := svc.SubmitReport(r.Context(), banlist.NewReport{ReportedPubKey: q.pk, Reason: strings.TrimSpace(q.Reason), EventIDs: q.EventIDs, Comment: q.Comment})
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusCreated, map[string]string{"status": "received", "report_id": rep.ID})
	})
}

type reportView struct {
	ReportID       string    `json:"report_id"`
	ReportedPubKey string    `json:"reported_pubkey"`
	Reason         string    `json:"reason"`
	Type           string    `json:"type"`
	RawType        *string   `json:"raw_type"`
	EventIDs       []string  `json:"event_ids"`
	Comment        string    `json:"comment"`
	CreatedAt      int64     `json:"created_at"`
	Source         string    `json:"source"`
	Reporter       *string   `json:"reporter"`
	ReporterWoT    *standing `json:"reporter_wot"`
}

func handleReports(svc *banlist.Service, trust *wot.WoT) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		page, err := paging.Parse(r)
		if err != nil {
			return err
		}
		byStanding, err := sortParam(r)
		if err != nil {
			return err
		}
		reports, err := svc.Reports(r.Context(), page.Until, page.Limit)
		if err != nil {
			return err
		}
		out := make([]reportView, len(reports))
		for i, rep := range reports {
			v := reportView{ReportID: rep.ID, ReportedPubKey: pubkey.NPub(rep.ReportedPubKey), Reason: rep.Reason, Type: rep.Type,
				EventIDs: rep.EventIDs, Comment: rep.Comment, CreatedAt: rep.CreatedAt, Source: rep.Source}
			if rep.Reporter != "" {
				n := pubkey.NPub(rep.Reporter)
				v.Reporter, v.ReporterWoT = &n, standingOf(trust, rep.Reporter)
			}
			if rep.RawType != "" {
				v.RawType = &rep.RawType
			}
			out[i] = v
		}
		if byStanding {
			sortByStanding(out)
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"reports": out})
	})
}

// paging is every list's: newest first, 100 entries by default and 1,000
// at most, the next page with ?until=<unix>.
var paging = httpapi.Paging{Default: 100, Max: 1000, Cursor: httpapi.Until}

// --- admin: bans ---

type banView struct {
	ID        string  `json:"id"`
	PubKey    string  `json:"pubkey"`
	PubKeyHex string  `json:"pubkey_hex"`
	Reason    string  `json:"reason"`
	CreatedAt int64   `json:"created_at"`
	ExpiresAt *int64  `json:"expires_at"`
	State     string  `json:"state"`
	BannedBy  string  `json:"banned_by"`
	LiftedAt  *int64  `json:"lifted_at"`
	LiftedBy  *string `json:"lifted_by"`
	Batch     string  `json:"batch,omitempty"`
}

func viewBan(b banlist.Ban, now int64) banView {
	return banView{ID: b.ID, PubKey: pubkey.NPub(b.PubKey), PubKeyHex: b.PubKey, Reason: b.Reason, CreatedAt: b.CreatedAt,
		ExpiresAt: b.ExpiresAt, State: b.State(now), BannedBy: b.BannedBy, LiftedAt: b.LiftedAt, LiftedBy: b.LiftedBy, Batch: b.Batch}
}

type banResult struct {
	Status string  `json:"status"`
	Ban    banView `json:"ban"`
}

// maxDuration keeps expires_at far from overflow (100 years).
const maxDuration = 100 * 365 * 24 * 3600

type banRequest struct {
	PubKey   string `json:"pubkey"`
	Reason   string `json:"reason"`
	Duration *int64 `json:"duration"`
	pk       string
}

func (q *banRequest) Valid() (err error) {
	if q.pk, err = parsePubKey(q.PubKey, "pubkey"); err != nil {
		return err
	}
	if q.Duration != nil && (*q.Duration <= 0 || *q.Duration > maxDuration) {
		return outpost.Errorf(outpost.Invalid, "invalid_duration", "duration must be a number of seconds from 1 to %d", maxDuration).With("field", "duration")
	}
	q.Reason = strings.TrimSpace(q.Reason)
	return nil
}

func handleBan(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[banRequest](w, r)
		if err != nil {
			return err
		}
		var expires *int64
		if q.Duration != nil {
			e := svc.ExpiresIn(*q.Duration)
			expires = &e
		}
		b, err := svc.Ban(r.Context(), actor(r), q.pk, q.Reason, expires)
		return respondBan(w, "banned", b, err)
	})
}

type tempBanRequest struct {
	PubKey    string `json:"pubkey"`
	Reason    string `json:"reason"`
	ExpiresAt *int64 `json:"expires_at"`
	pk        string
}

func (q *tempBanRequest) Valid() (err error) {
	if q.pk, err = parsePubKey(q.PubKey, "pubkey"); err != nil {
		return err
	}
	if q.ExpiresAt == nil {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "expires_at is required").With("field", "expires_at")
	}
	q.Reason = strings.TrimSpace(q.Reason)
	return nil
}

func handleTempBan(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[tempBanRequest](w, r)
		if err != nil {
			return err
		}
		b, err := svc.Ban(r.Context(), actor(r), q.pk, q.Reason, q.ExpiresAt)
		return respondBan(w, "banned", b, err)
	})
}

type unbanRequest struct {
	PubKey string `json:"pubkey"`
	pk     string
}

func (q *unbanRequest) Valid() (err error) {
	q.pk, err = parsePubKey(q.PubKey, "pubkey")
	return err
}

func handleUnban(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[unbanRequest](w, r)
		if err != nil {
			return err
		}
		b, err := svc.Unban(r.Context(), actor(r), q.pk)
		return respondBan(w, "unbanned", b, err)
	})
}

func respondBan(w http.ResponseWriter, status string, b banlist.Ban, err error) error {
	if err != nil {
		return err
	}
	return httpapi.Encode(w, http.StatusOK, banResult{Status: status, Ban: viewBan(b, time.Now().Unix())})
}

func handleBans(svc *banlist.Service, now func() time.Time) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		page, err := paging.Parse(r)
		if err != nil {
			return err
		}
		state := r.URL.Query().Get("state")
		switch state {
		case "", banlist.StateActive, banlist.StateExpired, banlist.StateLifted:
		default:
			return outpost.Errorf(outpost.Invalid, "invalid_state", "state must be active, expired or lifted")
		}
		bans, err := svc.Bans(r.Context(), state, page.Until, page.Limit)
		if err != nil {
			return err
		}
		t := now().Unix()
		out := make([]banView, len(bans))
		for i, b := range bans {
			out[i] = viewBan(b, t)
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"bans": out})
	})
}

// --- admin: words ---

func handleWords(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		words, err := svc.Words(r.Context())
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"words": words})
	})
}

type wordRequest struct {
	Word string `json:"word"`
}

func (q *wordRequest) Valid() error {
	q.Word = strings.TrimSpace(q.Word)
	if q.Word == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "word is required").With("field", "word")
	}
	return nil
}

// handleAddWord blocks a word ({"word": ...}), or many at once (an array
// of words: handleAddWords).
func handleAddWord(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		body, err := readBulk(w, r)
		if err != nil {
			return err
		}
		if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
			return handleAddWords(svc, w, r, trimmed)
		}
		var q wordRequest
		if err := httpapi.DecodeBytes(body, &q); err != nil {
			return err
		}
		if err := q.Valid(); err != nil {
			return err
		}
		word, err := svc.AddWord(r.Context(), actor(r), q.Word)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusCreated, map[string]any{"status": "added", "word": word})
	})
}

func handleRemoveWord(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		word, err := svc.RemoveWord(r.Context(), actor(r), httpapi.PathParam(r, "word"))
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"status": "removed", "word": word})
	})
}

// --- admin: keys and audit ---

type keyRequest struct {
	Name string       `json:"name"`
	Role banlist.Role `json:"role"`
}

func handleCreateKey(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[keyRequest](w, r)
		if err != nil {
			return err
		}
		secret, k, err := svc.CreateKey(r.Context(), actor(r), q.Name, q.Role)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusCreated, map[string]any{"status": "created", "api_key": secret, "key": k})
	})
}

func handleKeys(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		keys, err := svc.Keys(r.Context())
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"keys": keys})
	})
}

func handleRevokeKey(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		k, err := svc.RevokeKey(r.Context(), actor(r), httpapi.PathParam(r, "key"))
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"status": "revoked", "key": k})
	})
}

func handleAudit(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		page, err := paging.Parse(r)
		if err != nil {
			return err
		}
		entries, err := svc.Audit(r.Context(), page.Until, page.Limit)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"audit": entries})
	})
}
