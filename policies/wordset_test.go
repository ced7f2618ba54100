package policies

import (
	"fmt"
	"slices"
	"testing"
)

// TestWordChangesAtOnce: a word added to or removed from thousands is
// enforced at once, before the matcher of all of them is built again (about
// a second at 5,000 words, which every change used to wait for); the
// rebuild, when it runs, changes nothing that is matched.
func TestWordChangesAtOnce(t *testing.T) {
	var rebuilds []func()
	startRebuild = func(f func()) { rebuilds = append(rebuilds, f) }
	t.Cleanup(func() { startRebuild = func(f func()) { go f() } })

	words := make([]string, 3000)
	for i := range words {
		words[i] = fmt.Sprintf("blocked%04d", i)
	}
	l := NewBanList()
	l.SetWords(words)
	base := l.words.Load().base
	l.AddWords("Fresh Spam", "blocked0001", "!!!")
	l.RemoveWords("BLOCKED0002")
	l.AddWords("again")
	l.RemoveWords("again")
	if l.words.Load().base != base {
		t.Fatal("a change rebuilt the matcher of every word")
	}
	if len(rebuilds) != 1 {
		t.Fatalf("%d rebuilds started, want 1", len(rebuilds))
	}
	check := func(when string) {
		t.Helper()
		for text, want := range map[string]string{
			"buy fresh  SPAM now": "Fresh Spam", "x blocked0001 y": "blocked0001",
			"blocked0002": "", "again": "", "blocked2999": "blocked2999", "freshspam": "",
		} {
			if got, ok := l.BlockedWord(text); got != want || ok != (want != "") {
				t.Errorf("%s: BlockedWord(%q) = %q %v, want %q", when, text, got, ok, want)
			}
		}
		if n := l.WordCount(); n != 3000 {
			t.Errorf("%s: %d words, want 3000", when, n)
		}
		if w := l.Words(); !slices.Contains(w, "Fresh Spam") || slices.Contains(w, "blocked0002") {
			t.Errorf("%s: Words() wrong", when)
		}
	}
	check("before the rebuild")
	rebuilds[0]()
	if s := l.words.Load(); !s.settled() || s.base == base {
		t.Fatal("the rebuild did not fold the changes in")
	}
	check("after the rebuild")
}
