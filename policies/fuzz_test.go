package policies

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Any word that normalizes to something is found when it stands alone in a
// text, and normalizing twice changes nothing.
func FuzzWordMatcher(f *testing.F) {
	for _, s := range []string{"ass", "Bad Phrase", "ＳＣＡＭ", "死ね", "straße", "ﬁne", "e\u0301", "a.b", "İstanbul", "ǅ", "\u0345", "x\u200by"} {
		f.Add(s, "hello")
	}
	f.Fuzz(func(t *testing.T, word, text string) {
		if !utf8.ValidString(word) || !utf8.ValidString(text) {
			t.Skip()
		}
		n := NormalizeText(word)
		if again := NormalizeText(n); again != n {
			t.Fatalf("not idempotent: %q → %q → %q", word, n, again)
		}
		m := newWordMatcher([]string{word})
		if n == "" {
			if m != nil {
				t.Fatalf("%q normalizes to nothing but made a matcher", word)
			}
			return
		}
		if _, ok := m.find(text + " " + word + " " + text); !ok && !strings.ContainsAny(text, "\x00") {
			t.Fatalf("%q not found in %q", word, text+" "+word+" "+text)
		}
	})
}

// The fast path for non-ASCII text gives what the full one gives.
func FuzzFastPath(f *testing.F) {
	for _, s := range []string{"gm ☕ nostr", "Café crème", "Straße", "ﬁne", "İstanbul", "ΣΟΦΟΣ", "Ꭻ", "e\u0301", "한국어 텍스트", "😀😀", "ǅemal", "ŉ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		fast := string(appendNormalized(nil, s))
		full := string(appendNormalizedUnicode(nil, s))
		if fast != full {
			t.Fatalf("%q: fast path %q, full path %q", s, fast, full)
		}
	})
}
