package mintdir

import (
	"strings"
	"testing"
)

// The directory's URLs are minturl's spelling (tested there), at most 100
// bytes long.
func TestCatalogueURL(t *testing.T) {
	t.Parallel()
	if got, err := catalogueURL("HTTPS://Mint.Example.com.:443/Cashu/"); err != nil || got != "https://mint.example.com/Cashu" {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range []string{"mint.example.com", "https://" + strings.Repeat("a", 100) + ".com"} {
		if got, err := catalogueURL(bad); err == nil {
			t.Errorf("catalogueURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestURLTypes(t *testing.T) {
	t.Parallel()
	m := &Mint{CanonicalURL: "https://a.example", Status: StatusOnline, URLs: []MintURL{
		{URL: "https://a.example"}, {URL: "http://abc.onion", Advertised: true}, {URL: "https://b.example"}}}
	want := map[string][2]any{"https://a.example": {URLClearnet, true}, "http://abc.onion": {URLTor, true}, "https://b.example": {URLMirror, false}}
	for _, u := range m.URLs {
		if got := [2]any{m.URLType(u.URL), m.URLActive(u)}; got != want[u.URL] {
			t.Errorf("%s: %v, want %v", u.URL, got, want[u.URL])
		}
	}
	m.Status = StatusOffline
	if m.URLActive(m.URLs[0]) {
		t.Error("the canonical URL of an offline mint is active")
	}
}
