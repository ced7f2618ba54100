package mintdir

import (
	"context"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// NIP-87 kinds.
const (
	KindRecommendation    = 38000 // a user's review of a mint
	KindCashuAnnouncement = 38172 // a Cashu mint announcing itself
)

// Review is a kind-38000 recommendation of a mint.
type Review struct {
	EventID   string
	PubKey    string // hex
	CreatedAt time.Time
	Rating    *int // 1–5, nil when the review has none
	Content   string
	// Weight is the author's say in the trust score when the review was
	// read (Config.Weight): 0 outside the web of trust, listed all the same.
	Weight float64
}

// ReviewSummary sums up a mint's reviews.
type ReviewSummary struct {
	Count         int      `json:"count"`
	RatedCount    int      `json:"rated_count"`
	AverageRating *float64 `json:"average_rating"` // weighted by the authors' weights; nil when no rated review weighs anything
	// WeightedCount is the rated reviews' weights summed: RatedCount when
	// every author counts fully. nil in a summary stored before weights.
	WeightedCount *float64 `json:"weighted_count"`
}

var ratingPrefix = regexp.MustCompile(`^\s*\[([1-5])\s*/\s*5\]\s*`)

// ParseReview reads a review: the rating from a "rating" tag (1–5), else a
// leading "[N/5]" in the content, else none (never a default). The prefix
// is removed from the content.
func ParseReview(ev *nostr.Event) Review {
	r := Review{EventID: ev.ID, PubKey: ev.PubKey, CreatedAt: ev.CreatedAt.Time().UTC(), Content: strings.TrimSpace(ev.Content)}
	if m := ratingPrefix.FindStringSubmatch(ev.Content); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.Rating = &n
		r.Content = strings.TrimSpace(ev.Content[len(m[0]):])
	}
	if t := ev.Tags.Find("rating"); t != nil {
		if n, ok := parseRating(t[1]); ok {
			r.Rating = &n
		}
	}
	return r
}

// parseRating accepts an integer 1–5 ("4", "4.0").
func parseRating(s string) (int, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f != math.Trunc(f) || f < 1 || f > 5 {
		return 0, false
	}
	return int(f), true
}

// isMintReview: kind 38000 with k=38172.
func isMintReview(ev *nostr.Event) bool {
	if ev.Kind != KindRecommendation {
		return false
	}
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "k" && t[1] == strconv.Itoa(KindCashuAnnouncement) {
			return true
		}
	}
	return false
}

// reviews returns a mint's reviews, newest first, one per author (the newest
// wins), without the operator's own. A review is a kind-38000 event with
// k=38172 whose u tag normalises to one of the mint's URLs, or whose d tag
// is the mint's pubkey. The queries go through the event store's tag index
// (a tag and no kind, so it scans the tag's events rather than every
// event of the kind).
func (d *Directory) reviews(ctx context.Context, m *Mint) ([]Review, error) {
	urls := map[string]bool{}
	for _, u := range m.URLs {
		urls[u.URL] = true
	}
	spellings, err := d.reviewSpellings(m)
	if err != nil {
		return nil, err
	}
	filters := []nostr.Filter{{Tags: nostr.TagMap{"u": spellings}, Limit: 1000}}
	if m.PubKey != "" {
		filters = append(filters, nostr.Filter{Tags: nostr.TagMap{"d": {m.PubKey}}, Limit: 1000})
	}
	newest := map[string]*nostr.Event{}
	for _, f := range filters {
		for ev, err := range d.events.Find(ctx, f) {
			if err != nil {
				return nil, err
			}
			if !isMintReview(ev) || !reviewsMint(ev, m, urls) {
				continue
			}
			if slices.Contains(m.Operators, ev.PubKey) || slices.Contains(m.AnnouncedBy, ev.PubKey) {
				continue // the operator's word about their own mint
			}
			if cur, ok := newest[ev.PubKey]; !ok || ev.CreatedAt > cur.CreatedAt || (ev.CreatedAt == cur.CreatedAt && ev.ID < cur.ID) {
				newest[ev.PubKey] = ev
			}
		}
	}
	out := make([]Review, 0, len(newest))
	for _, ev := range newest {
		r := ParseReview(ev)
		r.Weight = d.cfg.Weight(r.PubKey)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].EventID < out[j].EventID
	})
	return out, nil
}

func reviewsMint(ev *nostr.Event, m *Mint, urls map[string]bool) bool {
	for _, t := range ev.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "d":
			if m.PubKey != "" && t[1] == m.PubKey {
				return true
			}
		case "u":
			if u, err := catalogueURL(t[1]); err == nil && urls[u] {
				return true
			}
		}
	}
	return false
}

// reviewSpellings lists the u-tag values to look up: each URL as stored,
// with a trailing slash, and every other spelling seen in a saved review
// that normalises to it (the tag index matches exactly).
func (d *Directory) reviewSpellings(m *Mint) ([]string, error) {
	var out []string
	err := d.db.View(func(txn *kv.Txn) error {
		for _, u := range m.URLs {
			out = append(out, u.URL, u.URL+"/")
			err := kv.EachKey(txn, append(key(kReviewURL, []byte(u.URL)), 0), func(spelling []byte) (bool, error) {
				if s := string(spelling); !slices.Contains(out, s) {
					out = append(out, s)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// Reviews returns a page of a mint's reviews (created before `before`, zero:
// any; newest first) and the summary of all of them.
func (d *Directory) Reviews(ctx context.Context, m *Mint, before time.Time, limit int) ([]Review, ReviewSummary, error) {
	all, err := d.reviews(ctx, m)
	if err != nil {
		return nil, ReviewSummary{}, err
	}
	sum := summarizeReviews(all)
	page := make([]Review, 0, min(limit, len(all)))
	for _, r := range all {
		if len(page) == limit {
			break
		}
		if before.IsZero() || r.CreatedAt.Before(before) {
			page = append(page, r)
		}
	}
	return page, sum, nil
}

// summarizeReviews counts the reviews and averages the ratings, each by its
// author's weight: a thousand reviews by keys outside the web of trust are
// listed and counted but move neither the average nor the trust score.
func summarizeReviews(rs []Review) ReviewSummary {
	s := ReviewSummary{Count: len(rs)}
	weights, sum := 0.0, 0.0
	for _, r := range rs {
		if r.Rating != nil {
			s.RatedCount++
			weights += r.Weight
			sum += r.Weight * float64(*r.Rating)
		}
	}
	weighted := math.Round(weights*100) / 100
	s.WeightedCount = &weighted
	if weights > 0 {
		avg := math.Round(sum/weights*100) / 100
		s.AverageRating = &avg
	}
	return s
}
