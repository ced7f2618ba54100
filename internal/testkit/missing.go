package testkit

import (
	"fmt"
	"os"
	"testing"
)

// Missing skips t because an outside tool it runs against (Nutshell,
// strfry) is not installed, and says so even without -v: go test hides
// what a passing package printed, so the line also goes to the terminal
// (/dev/tty) when there is one. CI installs every tool, so under CI=true a
// missing one fails the test instead of letting it pass unrun. Under
// -short, where the slow tools are left out on purpose, it only skips.
func Missing(t testing.TB, tool string, err error) {
	t.Helper()
	why := fmt.Sprintf("%s not available: %v", tool, err)
	if testing.Short() {
		t.Skip(why)
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI=true, where every tool is installed: failing instead of skipping)")
	}
	msg := fmt.Sprintf("%s skipped: %s", t.Name(), why)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprintln(tty, "--- SKIP:", msg)
		tty.Close()
	}
	t.Skip(msg)
}
