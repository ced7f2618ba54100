package banlistapi

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/wot"
)

// standing is a reporter's standing in the web of trust, as the reports
// list shows it: a report from a key made a minute ago, outside it, can be
// told from one by a key the community follows.
type standing struct {
	Hops      int     `json:"hops"`
	Followers int     `json:"followers"`
	Rank      float64 `json:"rank"`
	Member    bool    `json:"member"`
}

// standingOf is pk's standing; nil without a web of trust.
func standingOf(trust *wot.WoT, pk string) *standing {
	if trust == nil || !trust.Enabled() {
		return nil
	}
	st := trust.StandingOf(pk)
	return &standing{Hops: st.Hops, Followers: st.Followers, Rank: st.Rank, Member: st.Member}
}

// sortParam reads ?sort=: true for reporter_wot.
func sortParam(r *http.Request) (bool, error) {
	switch r.URL.Query().Get("sort") {
	case "", "newest":
		return false, nil
	case "reporter_wot":
		return true, nil
	}
	return false, outpost.Errorf(outpost.Invalid, "invalid_sort", "sort must be newest or reporter_wot").With("field", "sort")
}

// sortByStanding puts members first, then by rank, highest first; reports
// without a standing (anonymous, or no web of trust) last; newest first
// among equals, as the page came.
func sortByStanding(reports []reportView) {
	key := func(v reportView) (int, float64) {
		switch st := v.ReporterWoT; {
		case st == nil:
			return 2, 0
		case st.Member:
			return 0, -st.Rank
		default:
			return 1, -st.Rank
		}
	}
	slices.SortStableFunc(reports, func(a, b reportView) int {
		ga, ra := key(a)
		gb, rb := key(b)
		return cmp.Or(cmp.Compare(ga, gb), cmp.Compare(ra, rb))
	})
}
