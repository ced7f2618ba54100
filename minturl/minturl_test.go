package minturl

import "testing"

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"https://Mint.Example.com/":          "https://mint.example.com",
		"HTTPS://mint.example.com:443":       "https://mint.example.com",
		"https://Mint.Example:443/":          "https://mint.example",
		"http://mint.example.com:80/":        "http://mint.example.com",
		"http://mint.example.com:8080":       "http://mint.example.com:8080",
		"https://mint.example.com:80":        "https://mint.example.com:80",
		"https://mint.example.com/Cashu/":    "https://mint.example.com/Cashu",
		"https://mint.example.com.":          "https://mint.example.com",
		"https://mint.example.com.:443/x/":   "https://mint.example.com/x",
		"  https://mint.example.com  ":       "https://mint.example.com",
		"http://[::1]:3338/":                 "http://[::1]:3338",
		"https://[2001:DB8::1]:443/":         "https://[2001:db8::1]",
		"http://abcdefghijklmnop.onion":      "http://abcdefghijklmnop.onion",
		"https://mint.example.com//":         "https://mint.example.com",
		"https://mint.example.com/a%20b":     "https://mint.example.com/a%20b",
		"http://127.0.0.1:3338":              "http://127.0.0.1:3338",
		"https://xn--mnt-cla.example/path//": "https://xn--mnt-cla.example/path",
	} {
		got, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "mint.example.com", "ftp://mint.example.com", "https://user:pw@mint.example.com",
		"https://mint.example.com/?x=1", "https://mint.example.com?", "https://mint.example.com/#top", "https:///path",
		"https://:443", "https://.", "javascript:alert(1)", "http://[::1"} {
		if got, err := Normalize(bad); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", bad, got)
		}
	}
}
