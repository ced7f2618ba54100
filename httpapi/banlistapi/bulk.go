package banlistapi

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
)

// maxBulkBytes caps a bulk ban body: banlist.MaxBatch bans with long reasons.
const maxBulkBytes = 8 << 20

// bulkBan is one ban of POST /admin/bans: a ban (duration) or a temporary
// ban (expires_at), not both.
type bulkBan struct {
	PubKey    string `json:"pubkey"`
	Reason    string `json:"reason"`
	Duration  *int64 `json:"duration"`
	ExpiresAt *int64 `json:"expires_at"`
}

type batchResult struct {
	Status string        `json:"status"`
	Batch  banlist.Batch `json:"batch"`
}

// handleBanMany bans a batch of keys: a JSON array of bans, or NDJSON (one
// ban a line) with Content-Type application/x-ndjson. The whole batch is
// checked before any of it is written.
func handleBanMany(svc *banlist.Service) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		body, err := readBulk(w, r)
		if err != nil {
			return err
		}
		bans, err := decodeBatch(bytes.NewReader(body), isNDJSON(r))
		if err != nil {
			return err
		}
		reqs := make([]banlist.BanRequest, len(bans))
		for i, b := range bans {
			if reqs[i], err = b.request(svc); err != nil {
				e := outpost.AsError(err).With("index", i)
				e.Message = fmt.Sprintf("ban %d: %s", i, e.Message)
				return e
			}
		}
		batch, err := svc.BanMany(r.Context(), actor(r), reqs)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, batchResult{Status: "banned", Batch: batch})
	})
}

// readBulk reads a body of up to maxBulkBytes, whole first, so an oversized
// body is 413 whatever it holds.
func readBulk(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBulkBytes))
	if err != nil {
		return nil, readErrorOr(err, outpost.Errorf(outpost.Invalid, "invalid_request", "could not read the request body"))
	}
	return body, nil
}

type wordBatchResult struct {
	Status string            `json:"status"`
	Batch  banlist.WordBatch `json:"batch"`
}

// handleAddWords blocks an array of words at once (banlist.AddWords).
func handleAddWords(svc *banlist.Service, w http.ResponseWriter, r *http.Request, body []byte) error {
	var words []string
	if err := json.Unmarshal(body, &words); err != nil {
		return outpost.Errorf(outpost.Invalid, "invalid_json", "a batch of words is a JSON array of strings")
	}
	batch, err := svc.AddWords(r.Context(), actor(r), words)
	if err != nil {
		return err
	}
	return httpapi.Encode(w, http.StatusCreated, wordBatchResult{Status: "added", Batch: batch})
}

func isNDJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == ndjsonType
}

func (b bulkBan) request(svc *banlist.Service) (banlist.BanRequest, error) {
	pk, err := parsePubKey(b.PubKey, "pubkey")
	if err != nil {
		return banlist.BanRequest{}, err
	}
	q := banlist.BanRequest{PubKey: pk, Reason: strings.TrimSpace(b.Reason), ExpiresAt: b.ExpiresAt}
	switch {
	case b.Duration != nil && b.ExpiresAt != nil:
		return q, outpost.Errorf(outpost.Invalid, "invalid_request", "give duration or expires_at, not both").With("field", "duration")
	case b.Duration != nil && (*b.Duration <= 0 || *b.Duration > maxDuration):
		return q, outpost.Errorf(outpost.Invalid, "invalid_duration", "duration must be a number of seconds from 1 to %d", maxDuration).With("field", "duration")
	case b.Duration != nil:
		e := svc.ExpiresIn(*b.Duration)
		q.ExpiresAt = &e
	}
	return q, nil
}

// decodeBatch reads the bans one at a time, refusing more than
// banlist.MaxBatch before decoding the rest.
func decodeBatch(body io.Reader, ndjson bool) ([]bulkBan, error) {
	dec := json.NewDecoder(body)
	if !ndjson {
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, readErrorOr(err, outpost.Errorf(outpost.Invalid, "invalid_json", "the request body must be a JSON array of bans, or NDJSON"))
		}
	}
	var bans []bulkBan
	for dec.More() {
		if len(bans) == banlist.MaxBatch {
			return nil, outpost.Errorf(outpost.Invalid, "invalid_batch", "a batch holds at most %d bans", banlist.MaxBatch)
		}
		var b bulkBan
		if err := dec.Decode(&b); err != nil {
			return nil, banError(err, len(bans))
		}
		bans = append(bans, b)
	}
	if !ndjson {
		if _, err := dec.Token(); err != nil {
			return nil, banError(err, len(bans))
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, readErrorOr(err, outpost.Errorf(outpost.Invalid, "invalid_json", "nothing may follow the array of bans"))
	}
	return bans, nil
}

// banError is a decoding error of the ban at index i, in the error contract.
func banError(err error, i int) error {
	if e := asReadError(err); e != nil {
		return e
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return outpost.Errorf(outpost.Invalid, "invalid_field", "ban %d: field %q has the wrong type", i, typeErr.Field).
			With("field", typeErr.Field).With("index", i)
	}
	return outpost.Errorf(outpost.Invalid, "invalid_json", "ban %d is not a JSON object of a ban: %s", i, strings.TrimPrefix(err.Error(), "json: ")).With("index", i)
}

// asReadError is the error of a body that could not be read (too large, too
// slow), or nil when the failure was the JSON's.
func asReadError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return outpost.Errorf(outpost.TooLarge, "request_too_large", "the request body is larger than %d bytes", maxBulkBytes)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return outpost.Errorf(outpost.TimedOut, "request_timeout", "the request body did not arrive in time")
	}
	return nil
}

// readErrorOr is asReadError's error if err is one, else otherwise.
func readErrorOr(err, otherwise error) error {
	if e := asReadError(err); e != nil {
		return e
	}
	return otherwise
}

// pageLimits are those of the pages of GET /blocked/pubkeys.
var pageLimits = httpapi.Paging{Default: 1000, Max: 10_000}

// servePage answers a page of the active bans. A reader that pages
// through the list takes the first page's cursor: ?since= with it then
// gives every change made while it paged, and after.
func servePage(w http.ResponseWriter, r *http.Request, svc *banlist.Service, at time.Time) error {
	after := r.URL.Query().Get("after")
	if err := validAfter(after); err != nil {
		return err
	}
	page, err := pageLimits.Parse(r)
	if err != nil {
		return err
	}
	bans, next, err := svc.ActivePage(r.Context(), after, page.Limit)
	if err != nil {
		return err
	}
	out := banlist.BlockedPage{PubKeys: blockedEntries(bans), Issuer: banlist.IssuerOf(svc, at)}
	if next != "" {
		out.Next = &next
	}
	return httpapi.Encode(w, http.StatusOK, out)
}

// validAfter checks an ?after=: "" or the next of an earlier page.
func validAfter(after string) error {
	if after != "" && (len(after) != 64 || strings.ToLower(after) != after || !isHex(after)) {
		return outpost.Errorf(outpost.Invalid, "invalid_after", "after must be the next of an earlier page: 64 lowercase hex characters").With("field", "after")
	}
	return nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}
