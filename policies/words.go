package policies

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	aho "github.com/petar-dambovaliev/aho-corasick"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Text and blocked words are compared in one normal form: NFKC, Unicode case
// folding, and every run of separators (anything but letters, digits and
// marks) as one space, with a space at both ends. Word boundaries then become
// spaces, so a pattern " ass " cannot match inside "class" and one
// Aho–Corasick pass finds only valid matches. Punctuation counts as a
// separator: blocking "buy now" also blocks "buy.now".

// NormalizeText returns the normal form of s without its end spaces.
func NormalizeText(s string) string {
	return strings.TrimSpace(string(appendNormalized(nil, s)))
}

var folder = cases.Fold()

// asciiClass maps an ASCII byte to its lowercase form, or to 0 for a separator.
var asciiClass = func() (t [utf8.RuneSelf]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c] = c
		t[c-'a'+'A'] = c
	}
	return t
}()

// appendNormalized appends the normal form of s to dst. Most notes take a
// path that allocates nothing beyond dst: ASCII through a table, and other
// text that is already NFKC and whose letters fold one to one through
// caseless per rune. Anything else goes through x/text (appendNormalizedUnicode);
// FuzzFastPath checks that both give the same.
func appendNormalized(dst []byte, s string) []byte {
	start := len(dst)
	dst = append(dst, ' ')
	nfkc := false // whether the text from the first non-ASCII byte on is NFKC
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c = asciiClass[c]; c != 0 {
				dst = append(dst, c)
			} else if dst[len(dst)-1] != ' ' {
				dst = append(dst, ' ')
			}
			i++
			continue
		}
		// The character before may compose with what follows, so the
		// check starts there.
		if !nfkc {
			if !norm.NFKC.IsNormalString(s[max(i-1, 0):]) {
				return appendNormalizedUnicode(dst[:start], s)
			}
			nfkc = true
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case isWordRune(r):
			if foldsToMany(r) {
				return appendNormalizedUnicode(dst[:start], s)
			}
			dst = utf8.AppendRune(dst, caseless(r))
		case dst[len(dst)-1] != ' ':
			dst = append(dst, ' ')
		}
	}
	if dst[len(dst)-1] != ' ' {
		dst = append(dst, ' ')
	}
	return dst
}

// foldsToMany reports runes whose full case folding is not one rune of their
// own simple-folding orbit (ß → ss, ŉ → ʼn, ...): the fast path can't do them.
func foldsToMany(r rune) bool {
	if r > 0xFFFF {
		return false // full folding outside the BMP is all one-to-one
	}
	return fullFolding()[r>>6]&(1<<(r&63)) != 0
}

// fullFolding is a bit set over the BMP, computed once from x/text itself.
var fullFolding = sync.OnceValue(func() *[1024]uint64 {
	var set [1024]uint64
	for r := rune(utf8.RuneSelf); r <= 0xFFFF; r++ {
		if !isWordRune(r) || !utf8.ValidRune(r) {
			continue
		}
		f := []rune(folder.String(string(r)))
		if len(f) != 1 || caseless(f[0]) != caseless(r) {
			set[r>>6] |= 1 << (r & 63)
		}
	}
	return &set
})

func appendNormalizedUnicode(dst []byte, s string) []byte {
	s = norm.NFKC.String(folder.String(norm.NFKC.String(s)))
	dst = append(dst, ' ')
	for _, r := range s {
		if !isWordRune(r) {
			if dst[len(dst)-1] != ' ' {
				dst = append(dst, ' ')
			}
			continue
		}
		dst = utf8.AppendRune(dst, caseless(r))
	}
	if dst[len(dst)-1] != ' ' {
		dst = append(dst, ' ')
	}
	return dst
}

// caseless picks one rune for all the case variants of r: the lowercase of
// the smallest rune of its simple case-folding orbit. x/text's folding alone
// is not enough: it swaps Cherokee upper and lower case both ways.
func caseless(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return unicode.ToLower(least)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }

// needsBoundary says whether a pattern edge made of r must sit on a word
// boundary. Scripts written without spaces (Han, kana, Thai, ...) match anywhere.
func needsBoundary(r rune) bool {
	return !unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// wordMatcher finds blocked words in normalized text.
type wordMatcher struct {
	ac    aho.AhoCorasick
	words []string       // as given, in pattern order
	norms map[string]int // normal form → pattern
}

// newWordMatcher builds a matcher for words; it drops words with no letters or
// digits and words whose normal form repeats an earlier one.
func newWordMatcher(words []string) *wordMatcher { return buildMatcher(words, true) }

// buildMatcher builds a matcher as a DFA, fast to match but slow to build
// for thousands of words (about 1 s for 5,000), or without one, for the
// few words changed since (wordSet).
func buildMatcher(words []string, dfa bool) *wordMatcher {
	fullFolding() // built here, at start-up, not on the first non-ASCII event
	m := &wordMatcher{norms: map[string]int{}}
	var patterns []string
	for _, w := range words {
		p := NormalizeText(w)
		if _, seen := m.norms[p]; p == "" || seen {
			continue
		}
		m.norms[p] = len(patterns)
		if first, _ := utf8.DecodeRuneInString(p); needsBoundary(first) {
			p = " " + p
		}
		if last, _ := utf8.DecodeLastRuneInString(p); needsBoundary(last) {
			p += " "
		}
		patterns = append(patterns, p)
		m.words = append(m.words, strings.TrimSpace(w))
	}
	if len(patterns) == 0 {
		return nil
	}
	b := aho.NewAhoCorasickBuilder(aho.Opts{MatchKind: aho.LeftMostFirstMatch, DFA: dfa})
	m.ac = b.Build(patterns)
	return m
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// normalizedFor runs match on the normal forms of texts, in one pass: they
// are laid end to end, each with its end spaces, and no pattern holds two
// spaces in a row, so none matches across two texts.
func normalizedFor(texts []string, match func([]byte) (string, bool)) (string, bool) {
	bp := bufPool.Get().(*[]byte)
	text := (*bp)[:0]
	for _, s := range texts {
		if s != "" {
			text = appendNormalized(text, s)
		}
	}
	w, ok := match(text)
	*bp = text
	bufPool.Put(bp)
	return w, ok
}

// match is the first match in normalized text of a word not in skip.
func (m *wordMatcher) match(text []byte, skip map[string]bool) (string, bool) {
	if m == nil {
		return "", false
	}
	it := m.ac.IterByte(text)
	for match := it.Next(); match != nil; match = it.Next() {
		w := m.words[match.Pattern()]
		if len(skip) == 0 || !skip[NormalizeText(w)] {
			return w, true
		}
	}
	return "", false
}
