package policies

import "testing"

func TestNormalizeText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Hello World", "hello world"},
		{"  many \t\n spaces  ", "many spaces"},
		{"ＦＵＬＬＷＩＤＴＨ", "fullwidth"}, // NFKC
		{"Straße", "strasse"},      // full case folding
		{"ﬁne", "fine"},            // ligature, NFKC
		{"CAFÉ", "café"},
		{"e\u0301", "é"}, // composed by NFKC
		{"buy.now!!", "buy now"},
		{"don't", "don t"},
		{"🍑 peach", "peach"},
		{"Ꭻ", "ꭻ"}, {"ꭻ", "ꭻ"}, // Cherokee: both cases fold to one
		{"ΣΟΦΟΣ σοφος", "σοφοσ σοφοσ"}, // final sigma is sigma
		{"", ""},
	}
	for _, tt := range tests {
		if got := NormalizeText(tt.in); got != tt.want {
			t.Errorf("NormalizeText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWordMatcher(t *testing.T) {
	t.Parallel()
	words := []string{"ass", "Bad Phrase", "spam.example", "casino", "ＳＣＡＭ", "死ね", "straße"}
	m := newWordMatcher(words)
	tests := []struct {
		text string
		want string // the word as given; "" = no match
	}{
		{"a first class ticket", ""},
		{"what an ass!", "ass"},
		{"ASS", "ass"},
		{"assassin", ""},
		{"ass-kicking", "ass"},
		{"this is a bad phrase indeed", "Bad Phrase"},
		{"this is a BAD\n\tPHRASE", "Bad Phrase"},
		{"bad phrases", ""},
		{"a bad thing, phrase", ""},
		{"visit spam.example now", "spam.example"},
		{"visit spam example now", "spam.example"}, // punctuation is a separator
		{"visit myspam.example", ""},
		{"ｃａｓｉｎｏ night", "casino"},
		{"scam", "ＳＣＡＭ"},
		{"お前は死ねと言った", "死ね"},
		{"STRASSE", "straße"},
		{"classass class", ""},
		{"class ass", "ass"},
		{"ass ass", "ass"},
		{"", ""},
		{"ééé ass", "ass"},
		{"éass", ""},
		{"ass🍑", "ass"},
	}
	for _, tt := range tests {
		got, ok := m.find(tt.text)
		if tt.want == "" && ok {
			t.Errorf("find(%q) = %q, want no match", tt.text, got)
		}
		if tt.want != "" && (!ok || got != tt.want) {
			t.Errorf("find(%q) = %q, %v; want %q", tt.text, got, ok, tt.want)
		}
	}
}

func TestNewWordMatcherDropsEmptyAndDuplicates(t *testing.T) {
	t.Parallel()
	if newWordMatcher(nil) != nil || newWordMatcher([]string{"", " ", "!!!"}) != nil {
		t.Fatal("no usable words should give a nil matcher")
	}
	var m *wordMatcher
	if _, ok := m.find("anything"); ok {
		t.Fatal("nil matcher matched")
	}
	m = newWordMatcher([]string{" Spam ", "spam", "SPAM", "Two  Words"})
	if len(m.words) != 2 || m.words[0] != "Spam" || m.words[1] != "Two  Words" {
		t.Fatalf("words = %q, want [Spam, Two  Words]", m.words)
	}
}

// find returns the first blocked word in any of texts, as it was given to
// the matcher: a matcher alone, as a BanList's wordSet matches its base.
func (m *wordMatcher) find(texts ...string) (string, bool) {
	if m == nil {
		return "", false
	}
	return normalizedFor(texts, func(text []byte) (string, bool) { return m.match(text, nil) })
}
