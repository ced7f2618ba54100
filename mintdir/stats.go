package mintdir

import (
	"context"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Stats describe the whole directory.
type Stats struct {
	MintsTotal        int            `json:"mints_total"`
	ByStatus          map[string]int `json:"by_status"`
	AvgUptime24h      *float64       `json:"avg_uptime_24h"`
	AvgRTT24h         *int           `json:"avg_rtt_ms_24h"`
	ChecksTotal       int64          `json:"checks_total"`
	IncidentsOpen     int            `json:"incidents_open"`
	ReviewsTotal      int64          `json:"reviews_total"`
	TrustDistribution map[string]int `json:"trust_distribution"`
	NutAdoption       []NutCount     `json:"nut_adoption"`
}

// NutCount is how many mints support a NUT.
type NutCount struct {
	Nut   int `json:"nut"`
	Count int `json:"count"`
}

// statsCache keeps /stats from walking the catalogue on every request.
type statsCache struct {
	mu      sync.Mutex
	at      time.Time
	reviews int64
	stats   Stats
}

const statsTTL = 10 * time.Second

// Stats sums up the catalogue from the mints' stored summaries (no rollups
// are read), cached for 10 seconds.
func (d *Directory) Stats(ctx context.Context) (Stats, error) {
	now := d.now()
	c := &d.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) < statsTTL && now.After(c.at) && c.reviews == d.reviewsSeen.Load() {
		return c.stats, nil
	}
	reviewsSeen := d.reviewsSeen.Load()
	s, err := d.computeStats(ctx)
	if err != nil {
		return Stats{}, err
	}
	c.at, c.reviews, c.stats = now, reviewsSeen, s
	return s, nil
}

// computeStats walks the catalogue once and counts the reviews.
func (d *Directory) computeStats(ctx context.Context) (Stats, error) {
	s := Stats{ByStatus: map[string]int{}, TrustDistribution: map[string]int{}, NutAdoption: []NutCount{}}
	for _, st := range Statuses {
		s.ByStatus[st] = 0
	}
	for _, l := range []string{LevelHigh, LevelMedium, LevelLow, LevelVeryLow, LevelUnknown} {
		s.TrustDistribution[l] = 0
	}
	nuts := map[int]int{}
	var upSum, rttSum float64
	var upN, rttN int
	err := d.each(ctx, func(m *Mint) {
		s.MintsTotal++
		s.ByStatus[m.Status]++
		s.ChecksTotal += m.ChecksTotal
		if m.OpenIncident != nil {
			s.IncidentsOpen++
		}
		s.TrustDistribution[m.Summary.Trust.Level]++
		if u := m.Summary.Uptime24h; u != nil {
			upSum += *u
			upN++
		}
		if r := m.Summary.AvgRTT24h; r != nil {
			rttSum += float64(*r)
			rttN++
		}
		if m.Features != nil {
			for _, n := range m.Features.SupportedNuts {
				nuts[n]++
			}
		}
	})
	if err != nil {
		return Stats{}, err
	}
	if upN > 0 {
		v := math.Round(upSum/float64(upN)*100) / 100
		s.AvgUptime24h = &v
	}
	if rttN > 0 {
		v := int(math.Round(rttSum / float64(rttN)))
		s.AvgRTT24h = &v
	}
	for n, c := range nuts {
		s.NutAdoption = append(s.NutAdoption, NutCount{Nut: n, Count: c})
	}
	sort.Slice(s.NutAdoption, func(i, j int) bool { return s.NutAdoption[i].Nut < s.NutAdoption[j].Nut })
	reviews, err := d.events.Count(ctx, []nostr.Filter{{Kinds: []int{KindRecommendation},
		Tags: nostr.TagMap{"k": {strconv.Itoa(KindCashuAnnouncement)}}}}, nil)
	if err != nil {
		return Stats{}, err
	}
	s.ReviewsTotal = reviews
	return s, nil
}
