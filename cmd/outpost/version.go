package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/outpost-relay/outpost"
)

const versionUsage = `usage: outpost version   (or outpost --version)

prints outpost's version, the module version and the commit it was built
from (with "modified" when the work tree had uncommitted changes), as the Go
toolchain stamped them into the binary.
`

// versionCLI is "outpost version".
func versionCLI(args []string, stdout io.Writer) error {
	fs := newFlagSet("version")
	fs.Usage = func() { fmt.Fprint(fs.Output(), versionUsage) }
	if err := parseFlags(fs, "version", args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version", "version takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprint(stdout, versionText(outpost.Version, info))
	return nil
}

// versionText is the version, then what the Go toolchain stamped into the
// binary: the main module's version and the VCS revision (go build stamps
// them; go run and go test do not).
func versionText(version string, info *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "outpost %s\n", version)
	if info == nil {
		b.WriteString("commit  unknown (no build information in this binary)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "module  %s %s\n", info.Main.Path, info.Main.Version)
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	switch rev := vcs["vcs.revision"]; {
	case rev == "":
		b.WriteString("commit  unknown (built without VCS information, e.g. by go run)\n")
	case vcs["vcs.modified"] == "true":
		fmt.Fprintf(&b, "commit  %s (modified: built with uncommitted changes)\n", rev)
	default:
		fmt.Fprintf(&b, "commit  %s\n", rev)
	}
	if t := vcs["vcs.time"]; t != "" {
		fmt.Fprintf(&b, "date    %s\n", t)
	}
	if info.GoVersion != "" {
		fmt.Fprintf(&b, "go      %s\n", info.GoVersion)
	}
	return b.String()
}
