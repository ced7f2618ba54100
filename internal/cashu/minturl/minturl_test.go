package minturl

import (
	"net/url"
	"testing"
)

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
		// Ports are numbers: leading zeros go, the default port goes.
		"http://mint.example.com:0080":  "http://mint.example.com",
		"http://mint.example.com:08080": "http://mint.example.com:8080",
		"http://mint.example.com:65535": "http://mint.example.com:65535",
		// Dot segments are resolved as RFC 3986 §5.2.4 says, escaped or not.
		"https://mint.example.com/./..":           "https://mint.example.com",
		"https://mint.example.com/a/./b/../c":     "https://mint.example.com/a/c",
		"https://mint.example.com/a/%2e%2E/b":     "https://mint.example.com/b",
		"https://mint.example.com/a/%2E/b/":       "https://mint.example.com/a/b",
		"https://mint.example.com/../../cashu":    "https://mint.example.com/cashu",
		"https://mint.example.com/a%2Fb/../c":     "https://mint.example.com/c",
		"https://mint.example.com/a/..%2F/c":      "https://mint.example.com/a/..%2F/c", // one segment, not a dot segment
		"https://mint.example.com/.well-known/..": "https://mint.example.com",
	} {
		got, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "mint.example.com", "ftp://mint.example.com", "https://user:pw@mint.example.com",
		"https://mint.example.com/?x=1", "https://mint.example.com?", "https://mint.example.com/#top", "https:///path",
		"https://:443", "https://.", "http://..", "http://.mint.example", "http://mint..example", "http://0..", "javascript:alert(1)", "http://[::1",
		// An IPv6 zone names an interface of the machine that reads the URL:
		// it is no address of a mint, and it has no spelling in a URL that
		// parses back.
		"http://[fe80::1%25eth0]/", "http://[::1%25lo]:9", "http://[fe80::1%25en0]:3338/x",
		// Ports outside 1–65535.
		"http://mint.example.com:0", "http://mint.example.com:00", "http://mint.example.com:99999",
		"http://mint.example.com:65536", "https://mint.example.com:184467440737095516160"} {
		if got, err := Normalize(bad); err == nil {
			t.Errorf("Normalize(%q) = %q, want an error", bad, got)
		}
	}
}

// Whatever Normalize accepts, it spells so that it parses back and is its
// own normal form: the directory parses stored URLs again (for the host),
// and a stored URL must find itself.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"https://mint.example.com/", "http://[fe80::1%25eth0]/", "http://[::1%25lo]:9",
		"http://m.example:0", "http://m.example:99999", "https://m.example/./../a/%2e%2e/b", "http://[::1]:3338",
		"https://m.example/a%2Fb/../c", "HTTP://M.EXAMPLE.:080/x/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := Normalize(raw)
		if err != nil {
			return
		}
		u, err := url.Parse(n)
		if err != nil {
			t.Fatalf("Normalize(%q) = %q, which does not parse: %v", raw, n, err)
		}
		if u.Hostname() == "" {
			t.Fatalf("Normalize(%q) = %q, which has no host", raw, n)
		}
		if again, err := Normalize(n); err != nil || again != n {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q, %v", raw, n, n, again, err)
		}
	})
}
