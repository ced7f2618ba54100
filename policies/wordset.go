package policies

import (
	"slices"
	"strings"
)

// wordSet is the blocked words a BanList matches. The automaton for
// thousands of words takes about a second to build, so a change does not
// wait for one: the words changed since the last build are matched apart
// (added: a small automaton built per change; removed: matches of them
// skipped) until a build in the background (rebuildWords) folds them in.
// A set is never changed once stored.
type wordSet struct {
	base    *wordMatcher
	added   *wordMatcher    // words not in base
	removed map[string]bool // normal forms of base words no longer blocked
	words   []string        // every word, as given, one a normal form
	norms   []string        // their normal forms
}

func (s *wordSet) find(texts ...string) (string, bool) {
	if s == nil || len(s.words) == 0 {
		return "", false
	}
	return normalizedFor(texts, func(text []byte) (string, bool) {
		if w, ok := s.base.match(text, s.removed); ok {
			return w, ok
		}
		return s.added.match(text, nil)
	})
}

// settled reports whether base matches every word.
func (s *wordSet) settled() bool { return s.added == nil && len(s.removed) == 0 }

// fullSet is a set whose base holds every word.
func fullSet(words []string) *wordSet {
	m := newWordMatcher(words)
	if m == nil {
		return &wordSet{}
	}
	s := &wordSet{base: m, words: m.words, norms: make([]string, len(m.words))}
	for n, i := range m.norms {
		s.norms[i] = n
	}
	return s
}

// onBase is the set of words (with their normal forms) matched with base
// and what differs from it.
func onBase(base *wordMatcher, words, norms []string) *wordSet {
	s := &wordSet{base: base, words: words, norms: norms}
	var added []string
	current := make(map[string]bool, len(norms))
	for i, n := range norms {
		current[n] = true
		if _, ok := base.normsOrNil()[n]; !ok {
			added = append(added, words[i])
		}
	}
	s.added = buildMatcher(added, false)
	for n := range base.normsOrNil() {
		if !current[n] {
			if s.removed == nil {
				s.removed = map[string]bool{}
			}
			s.removed[n] = true
		}
	}
	return s
}

func (m *wordMatcher) normsOrNil() map[string]int {
	if m == nil {
		return nil
	}
	return m.norms
}

// AddWords blocks words besides those blocked, at once and without
// rebuilding the whole matcher; words whose normal form is blocked already,
// or empty, are left out.
func (l *BanList) AddWords(words ...string) {
	l.changeWords(func(ws, ns []string) ([]string, []string) {
		have := make(map[string]bool, len(ns)+len(words))
		for _, n := range ns {
			have[n] = true
		}
		for _, w := range words {
			if n := NormalizeText(w); n != "" && !have[n] {
				have[n] = true
				// In order of normal form, as the ban list keeps them.
				i, _ := slices.BinarySearch(ns, n)
				ws, ns = slices.Insert(ws, i, strings.TrimSpace(w)), slices.Insert(ns, i, n)
			}
		}
		return ws, ns
	})
}

// RemoveWords unblocks words, by their normal form.
func (l *BanList) RemoveWords(words ...string) {
	gone := map[string]bool{}
	for _, w := range words {
		gone[NormalizeText(w)] = true
	}
	l.changeWords(func(ws, ns []string) ([]string, []string) {
		var keepW, keepN []string
		for i, n := range ns {
			if !gone[n] {
				keepW, keepN = append(keepW, ws[i]), append(keepN, n)
			}
		}
		return keepW, keepN
	})
}

// changeWords stores the set change makes of the current words, matched on
// the current base, and starts a rebuild of the base if none runs.
func (l *BanList) changeWords(change func(words, norms []string) ([]string, []string)) {
	l.wordsMu.Lock()
	defer l.wordsMu.Unlock()
	cur := l.words.Load()
	if cur == nil {
		cur = &wordSet{}
	}
	words, norms := change(slices.Clip(cur.words), slices.Clip(cur.norms))
	next := onBase(cur.base, words, norms)
	l.words.Store(next)
	l.version.Add(1)
	if !next.settled() && !l.rebuilding {
		l.rebuilding = true
		startRebuild(l.rebuildWords)
	}
}

// startRebuild runs a rebuild; a test holds it back to see the set before.
var startRebuild = func(rebuild func()) { go rebuild() }

// rebuildWords builds a base for the current words, outside the lock, until
// one matches them all.
func (l *BanList) rebuildWords() {
	for {
		l.wordsMu.Lock()
		cur := l.words.Load()
		if cur.settled() {
			l.rebuilding = false
			l.wordsMu.Unlock()
			return
		}
		l.wordsMu.Unlock()
		base := newWordMatcher(cur.words)
		l.wordsMu.Lock()
		latest := l.words.Load()
		l.words.Store(onBase(base, latest.words, latest.norms))
		l.wordsMu.Unlock()
	}
}
