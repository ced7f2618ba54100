package mintdir

import (
	"strings"
	"testing"
)

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://Mint.Example.com/":          "https://mint.example.com",
		"HTTPS://mint.example.com:443":       "https://mint.example.com",
		"http://mint.example.com:80/":        "http://mint.example.com",
		"http://mint.example.com:8080":       "http://mint.example.com:8080",
		"https://mint.example.com/Cashu/":    "https://mint.example.com/Cashu",
		"https://mint.example.com.":          "https://mint.example.com",
		"  https://mint.example.com  ":       "https://mint.example.com",
		"http://[::1]:3338/":                 "http://[::1]:3338",
		"http://abcdefghijklmnop.onion":      "http://abcdefghijklmnop.onion",
		"https://mint.example.com//":         "https://mint.example.com",
		"https://mint.example.com/a%20b":     "https://mint.example.com/a%20b",
		"http://127.0.0.1:3338":              "http://127.0.0.1:3338",
		"https://xn--mnt-cla.example/path//": "https://xn--mnt-cla.example/path",
	} {
		got, err := NormalizeURL(in)
		if err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "mint.example.com", "ftp://mint.example.com", "https://user:pw@mint.example.com",
		"https://mint.example.com/?x=1", "https://mint.example.com/#top", "https:///path", "javascript:alert(1)",
		"https://" + strings.Repeat("a", 100) + ".com"} {
		if got, err := NormalizeURL(bad); err == nil {
			t.Errorf("NormalizeURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestURLTypes(t *testing.T) {
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
