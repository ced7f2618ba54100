package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outpost-relay/outpost/internal/ops/settings"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the settings tables of docs/configuration.md from the declarations")

// docsConfig is the page whose settings tables are made from the settings'
// declarations (their flag name, usage and default), between these markers,
// and whose table of contents is made from its headings.
const (
	docsConfig = "../../docs/configuration.md"
	beginMark  = "<!-- settings of %s: made by `go test ./cmd/outpost -run TestConfigurationDoc -update-docs` from the declarations; do not edit -->"
	endMark    = "<!-- end of the settings of %s -->"
	contents   = "contents"
	tocMark    = "<!-- contents: made by `go test ./cmd/outpost -run TestConfigurationDoc -update-docs` from the headings; do not edit -->"
	tocEnd     = "<!-- end of the contents -->"
)

// serveTables are serve's settings, a table for each group under a
// heading of its title.
func serveTables(t *testing.T) string {
	var b strings.Builder
	all, n := newConfigFlags(newFlagSet("serve")).fs, 0
	for _, g := range defaultConfig().settingGroups() {
		fs := newFlagSet("serve")
		for _, s := range g.settings {
			settings.Bind(fs, s)
		}
		fs.VisitAll(func(*flag.Flag) { n++ })
		fmt.Fprintf(&b, "### %s\n\n%s\n", g.title, settingsTable(fs))
	}
	all.VisitAll(func(*flag.Flag) { n-- })
	if n != 0 {
		t.Fatalf("the groups of settings hold %d flags more than serve has", n)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// toc lists md's headings of levels 2 and 3 after the one of the table of
// contents itself, as links, nested by level.
func toc(md string) string {
	var b strings.Builder
	after := false
	for _, hd := range headings(prose(md)) {
		if hd.level == 2 && hd.anchor == contents {
			after = true
			continue
		}
		if after && hd.level >= 2 && hd.level <= 3 {
			fmt.Fprintf(&b, "%s- [%s](#%s)\n", strings.Repeat("  ", hd.level-2), hd.text, hd.anchor)
		}
	}
	return b.String()
}

// between puts text between the markers begin and end of doc.
func between(t *testing.T, doc, begin, end, text string) string {
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has nothing between\n%s\nand\n%s", docsConfig, begin, end)
	}
	return doc[:i+len(begin)] + "\n\n" + text + "\n" + doc[j:]
}

// settingsTable writes fs's flags as a Markdown table: the environment
// variable, the flag, the default and what it is — what --help prints.
func settingsTable(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	fs.VisitAll(func(f *flag.Flag) {
		def := "–"
		if f.DefValue != "" && !statesDefault(f.Usage) {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s |\n", settings.EnvName(f.Name), f.Name, cell(def), cell(f.Usage))
	})
	return b.String()
}

// The settings tables in docs/configuration.md are what the code declares,
// and its table of contents what its headings are; -update-docs rewrites
// them.
func TestConfigurationDoc(t *testing.T) {
	t.Parallel()
	strfry, _ := newStrfryFlags()
	tables := []struct{ name, table string }{
		{"outpost serve", serveTables(t)},
		{"outpost strfry-policy", settingsTable(strfry)},
	}
	b, err := os.ReadFile(docsConfig)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, tb := range tables {
		doc = between(t, doc, fmt.Sprintf(beginMark, tb.name), fmt.Sprintf(endMark, tb.name), tb.table)
	}
	doc = between(t, doc, tocMark, tocEnd, toc(doc))
	if doc == string(b) {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(docsConfig, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s differs from the settings' declarations; run go test ./cmd/outpost -run TestConfigurationDoc -update-docs", docsConfig)
}

// Every OUTPOST_* variable the README and docs/ name is one outpost reads:
// a setting renamed or removed in the code cannot live on in the prose.
func TestDocsNameRealSettings(t *testing.T) {
	t.Parallel()
	known := knownVariables()
	files, _ := os.ReadDir("../../docs")
	paths := []string{"../../README.md"}
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".md") {
			paths = append(paths, "../../docs/"+f.Name())
		}
	}
	name := regexp.MustCompile(`OUTPOST_[A-Z0-9_]*[A-Z0-9]`)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range name.FindAllString(string(b), -1) {
			if !slices.Contains(known, n) {
				t.Errorf("%s names %s, which is no setting", p, n)
			}
		}
	}
}

// A default is shown unless the help text states it itself: a name in
// parentheses that starts with "default" is no such statement.
func TestConfigurationDocDefaults(t *testing.T) {
	t.Parallel()
	fs := newFlagSet("test")
	fs.Int("default-limit", 100, "events a filter without a limit gets (default_limit)")
	fs.String("mint-url", "http://127.0.0.1:3338", "a mint (default: an embedded one)")
	fs.Duration("timeout", 10e9, "a timeout (default 10s, or less)")
	table := settingsTable(fs)
	for _, want := range []string{
		"| `--default-limit` | `100` |",
		"| `--mint-url` | – |",
		"| `--timeout` | – |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table has no %q:\n%s", want, table)
		}
	}
	var help strings.Builder
	fs.SetOutput(&help)
	usage(fs, "test", func(string) string { return "" })
	if !strings.Contains(help.String(), "(default_limit) (default 100)") || strings.Count(help.String(), "(default") != 4 {
		t.Errorf("--help gives the defaults wrong:\n%s", help.String())
	}
}
