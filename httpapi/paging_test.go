package httpapi

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
)

func TestPaging(t *testing.T) {
	t.Parallel()
	before, _ := time.Parse(time.RFC3339, "2026-11-21T10:00:00Z")
	for _, tt := range []struct {
		paging Paging
		query  string
		want   Page
		code   string // of the 400, when it is one
	}{
		{Paging{50, 500, Before}, "", Page{Limit: 50}, ""},
		{Paging{50, 500, Before}, "limit=500&before=2026-11-21T10:00:00Z", Page{Limit: 500, Before: before}, ""},
		{Paging{50, 500, Before}, "limit=501", Page{}, "invalid_limit"},
		{Paging{50, 500, Before}, "limit=0", Page{}, "invalid_limit"},
		{Paging{50, 500, Before}, "limit=ten", Page{}, "invalid_limit"},
		{Paging{50, 500, Before}, "before=yesterday", Page{}, "invalid_before"},
		{Paging{50, 500, Before}, "until=1&offset=x", Page{Limit: 50}, ""}, // not this list's cursor
		{Paging{100, 1000, Until}, "until=1800000000&limit=1000", Page{Limit: 1000, Until: 1800000000}, ""},
		{Paging{100, 1000, Until}, "until=-1", Page{}, "invalid_until"},
		{Paging{100, 1000, Until}, "limit=1001", Page{}, "invalid_limit"},
		{Paging{50, 500, Offset}, "offset=20&limit=10", Page{Limit: 10, Offset: 20}, ""},
		{Paging{50, 500, Offset}, "offset=-1", Page{}, "invalid_offset"},
	} {
		got, err := tt.paging.Parse(httptest.NewRequest("GET", "/x?"+tt.query, nil))
		e := outpost.AsError(err)
		switch {
		case tt.code == "" && (err != nil || got != tt.want):
			t.Errorf("%v ?%s: got %+v, %v; want %+v", tt.paging, tt.query, got, err, tt.want)
		case tt.code != "" && (e == nil || e.Kind != outpost.Invalid || e.Code != tt.code || e.Details["field"] == nil):
			t.Errorf("%v ?%s: got %v, want a 400 %s naming the field", tt.paging, tt.query, err, tt.code)
		}
	}
}
