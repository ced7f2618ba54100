package web_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
)

// BenchmarkMintPage renders a mint's page (15 in-process API calls, two SVG
// charts); its baseline, BenchmarkMintPageAPICalls, fetches the same
// resources from the REST API over HTTP, as a browser-side page would.
func BenchmarkMintPage(b *testing.B) {
	for _, window := range []string{"24h", "30d"} {
		b.Run(window, func(b *testing.B) {
			s, id := benchSite(b)
			url := s.url + "/mintdir/mint/" + id + "?window=" + window
			b.ReportAllocs()
			for b.Loop() {
				benchGet(b, url, browserAccept)
			}
		})
	}
}

func BenchmarkMintPageAPICalls(b *testing.B) {
	for _, window := range []string{"24h", "30d"} {
		b.Run(window, func(b *testing.B) {
			s, id := benchSite(b)
			base := s.url + "/mintdir/mints/" + id
			paths := []string{"", "/status", "/metadata", "/metadata/history?limit=20", "/incidents?limit=20", "/trust",
				"/reviews?limit=50", "/views", "/features", "/urls", "/uptime?window=24h", "/uptime?window=7d", "/uptime?window=30d",
				"/uptime/timeseries?limit=500&window=" + window}
			if window == "30d" {
				paths = append(paths, "/uptime/timeseries?limit=500&window=30d&before=2000-01-01T00:00:00Z")
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range paths {
					benchGet(b, base+p, "application/json")
				}
			}
		})
	}
}

// benchSite is a site with one mint checked a few times.
func benchSite(b *testing.B) (*site, string) {
	s := newSite(b, siteOptions{})
	m := mintdirtest.NewFakeMint(b, map[string]any{"name": "Bench Mint", "description": "A mint."})
	id := s.addMint(m.URL)
	for range 5 {
		if err := s.dir.Probe(s.ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	return s, id
}

func benchGet(b *testing.B, url, accept string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
}
