package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outpost-relay/outpost/settings"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the settings tables of docs/configuration.md from the declarations")

// docsConfig is the page whose settings tables are made from the settings'
// declarations (their flag name, usage and default), between these markers.
const (
	docsConfig = "../../docs/configuration.md"
	beginMark  = "<!-- settings of %s: made by `go test ./cmd/outpost -run TestConfigurationDoc -update-docs` from the declarations; do not edit -->"
	endMark    = "<!-- end of the settings of %s -->"
)

// settingsTable writes fs's flags as a Markdown table: the environment
// variable, the flag, the default and what it is — what --help prints.
func settingsTable(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	fs.VisitAll(func(f *flag.Flag) {
		def := "–"
		if f.DefValue != "" && !strings.Contains(f.Usage, "(default") {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s |\n", settings.EnvName(f.Name), f.Name, cell(def), cell(f.Usage))
	})
	return b.String()
}

// The settings tables in docs/configuration.md are what the code declares;
// -update-docs rewrites them.
func TestConfigurationDoc(t *testing.T) {
	strfry, _ := newStrfryFlags()
	tables := []struct{ name, table string }{
		{"outpost serve", settingsTable(newConfigFlags(newFlagSet("serve")).fs)},
		{"outpost strfry-policy", settingsTable(strfry)},
	}
	b, err := os.ReadFile(docsConfig)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, tb := range tables {
		begin, end := fmt.Sprintf(beginMark, tb.name), fmt.Sprintf(endMark, tb.name)
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no table of the settings of %s between\n%s\nand\n%s", docsConfig, tb.name, begin, end)
		}
		doc = doc[:i+len(begin)] + "\n\n" + tb.table + "\n" + doc[j:]
	}
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
