package main

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// markdownDocs are the pages a reader follows links between: the README,
// BENCHMARKS.md and docs/*.md, by their path in the repository.
func markdownDocs(t *testing.T) []string {
	t.Helper()
	paths := []string{"README.md", "BENCHMARKS.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	for _, d := range docs {
		paths = append(paths, "docs/"+filepath.Base(d))
	}
	return paths
}

var (
	fence     = regexp.MustCompile("(?ms)^ {0,3}(```|~~~).*?^ {0,3}```|^ {0,3}~~~.*?^ {0,3}~~~")
	codeSpan  = regexp.MustCompile("`[^`\n]*`")
	inline    = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	reference = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	heading   = regexp.MustCompile(`(?m)^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// prose is Markdown without its fenced code blocks, which hold examples,
// not headings or links.
func prose(md string) string {
	return fence.ReplaceAllString(md, "")
}

// slug is the anchor GitHub gives a heading: its text (a link's text, not
// its target) in lower case, without what is neither a letter, a digit, a
// space, a hyphen nor an underscore, spaces made hyphens.
func slug(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

type mdHeading struct {
	level        int
	text, anchor string
}

// headings are the headings of md (without its code), each with the anchor
// GitHub gives it: its slug, numbered when repeated (x, x-1, x-2).
func headings(md string) []mdHeading {
	var out []mdHeading
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(md, -1) {
		s := slug(m[2])
		hd := mdHeading{level: len(m[1]), text: m[2], anchor: s}
		if n := seen[s]; n > 0 {
			hd.anchor = s + "-" + strconv.Itoa(n)
		}
		seen[s]++
		out = append(out, hd)
	}
	return out
}

// anchors are the #fragments a page has: one per heading and any <a id> or
// <a name>.
func anchors(md string) []string {
	var out []string
	for _, hd := range headings(md) {
		out = append(out, hd.anchor)
	}
	for _, m := range htmlID.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

// brokenLinks lists the relative links of the page at from (a path in the
// repository, its text md) to a file that is not there or to an anchor its
// page does not have; read gives a page's text by its repository path.
func brokenLinks(from, md string, read func(string) (string, bool)) []string {
	var bad []string
	text := codeSpan.ReplaceAllString(prose(md), "") // `[a](b)` is an example too
	var targets []string
	for _, re := range []*regexp.Regexp{inline, reference} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
	}
	for _, target := range targets {
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		to := from
		if file != "" {
			to = path.Join(path.Dir(from), file)
		}
		page, ok := read(to)
		switch {
		case !ok:
			bad = append(bad, target+": no file "+to)
		case anchor != "" && strings.HasSuffix(to, ".md") && !slices.Contains(anchors(prose(page)), anchor):
			bad = append(bad, target+": "+to+" has no heading #"+anchor)
		}
	}
	return bad
}

// readRepo reads a file of the repository; a directory is there too, with
// no text.
func readRepo(p string) (string, bool) {
	full := filepath.Join(repoRoot, filepath.FromSlash(p))
	if st, err := os.Stat(full); err == nil && st.IsDir() {
		return "", true
	}
	b, err := os.ReadFile(full)
	return string(b), err == nil
}

// Every relative link of the README, BENCHMARKS.md and docs/ leads to a
// file that is there and, for a #heading, to a heading its page has.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	for _, p := range markdownDocs(t) {
		md, ok := readRepo(p)
		if !ok {
			t.Fatalf("cannot read %s", p)
		}
		for _, b := range brokenLinks(p, md, readRepo) {
			t.Errorf("%s links to %s", p, b)
		}
	}
}

// The link check finds what GitHub would not: a missing page, a missing
// heading, a heading spelled the way GitHub does not slug it.
func TestBrokenLinks(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"guide/a.md": "# A\n\n## Running out of disk\n\n## The ban policy in `strfry`\n\n## Limits\n\n## Limits\n\n```sh\n# not a heading\n```\n",
		"README.md":  "x",
	}
	read := func(p string) (string, bool) { s, ok := pages[p]; return s, ok }
	ok := "[x](a.md#running-out-of-disk) [y](a.md#the-ban-policy-in-strfry) [z](../README.md) [w](#limits-1) [v](https://x.example/y.md#q)\n" +
		"[a\nlink over two lines](a.md#limits) `[in code](b.md)`\n\n[ref]: a.md#a\n"
	if bad := brokenLinks("guide/a.md", pages["guide/a.md"]+ok, read); len(bad) > 0 {
		t.Errorf("good links reported: %q", bad)
	}
	for _, link := range []string{"[x](b.md)", "[x](a.md#running-out-of-disk-space)", "[x](#not-a-heading)", "[x](#limits-2)", "[x](a.md#the-ban-policy-in-%60strfry%60)", "[x]: gone.md"} {
		if bad := brokenLinks("guide/a.md", pages["guide/a.md"]+link+"\n", read); len(bad) != 1 {
			t.Errorf("%s: want it reported, got %q", link, bad)
		}
	}
}

// docPointer is a mention of one of the project's pages in code or a
// comment: docs/<page>.md or design/<page>.md, not part of a longer path
// or URL.
var docPointer = regexp.MustCompile(`(?:^|[^\w./-])((?:docs|design)/[\w.-]+\.md)\b`)

// Every docs/<page>.md or design/<page>.md that the code or its comments
// name is a page of the repository (the design notes are not part of it: what they
// say for readers of the code is in docs/).
func TestCodePointsToRealDocs(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == "node_modules" || name == "artifacts" || (strings.HasPrefix(name, ".") && name != ".ci" && p != repoRoot) {
				return filepath.SkipDir
			}
			return nil
		}
		// Source and configuration, not what a build or a run leaves (an
		// outpost binary, a data dir) or fuzz corpora.
		if !slices.Contains([]string{".go", ".js", ".sh", ".yml", ".yaml", ".json", ".html", ".css", ".service", ".conf"}, filepath.Ext(name)) &&
			!slices.Contains([]string{"Caddyfile", "run", "dupl-allow"}, name) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range docPointer.FindAllStringSubmatch(line, -1) {
				if _, ok := readRepo(m[1]); !ok {
					rel, _ := filepath.Rel(repoRoot, p)
					t.Errorf("%s:%d points to %s, which is not in the repository", rel, i+1, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
