package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/outpost-relay/outpost"
)

// Cursors say where a page of a list starts.
const (
	Before = "before" // ?before=<ISO 8601 time>: entries older than it (newest first)
	Until  = "until"  // ?until=<unix time>: entries at or before it (newest first)
	Offset = "offset" // ?offset=<n>: after the first n entries
)

// Paging is how one list is paged: ?limit= from 1 to Max (Default when
// absent), and its Cursor parameter.
type Paging struct {
	Default, Max int
	Cursor       string // Before, Until or Offset
}

// Page is the part of a list a request asks for.
type Page struct {
	Limit  int
	Before time.Time // with Cursor Before; zero: from the newest
	Until  int64     // with Cursor Until; 0: from the newest
	Offset int       // with Cursor Offset
}

// Parse reads the page r asks for; a bad value is a 400 naming the field.
func (p Paging) Parse(r *http.Request) (Page, error) {
	q := r.URL.Query()
	page := Page{Limit: p.Default}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > p.Max {
			return Page{}, invalidParam("limit", "limit must be an integer from 1 to %d", p.Max)
		}
		page.Limit = n
	}
	s := q.Get(p.Cursor)
	if s == "" {
		return page, nil
	}
	switch p.Cursor {
	case Before:
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return Page{}, invalidParam(Before, "before must be an ISO 8601 time, e.g. 2026-11-21T10:00:00Z")
		}
		page.Before = t
	case Until:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return Page{}, invalidParam(Until, "until must be a unix timestamp")
		}
		page.Until = n
	case Offset:
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return Page{}, invalidParam(Offset, "offset must be an integer of 0 or more")
		}
		page.Offset = n
	}
	return page, nil
}

func invalidParam(field, format string, args ...any) error {
	return outpost.Errorf(outpost.Invalid, "invalid_"+field, format, args...).With("field", field)
}
