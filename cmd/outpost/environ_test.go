package main

import (
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/testkit"
)

func TestUnknownVariables(t *testing.T) {
	got := unknownVariables([]string{
		"OUTPOST_RATE_LIMT=5",            // a letter short
		"OUTPOST_FAUCET_COOLDOWM=1h",     // a letter wrong
		"OUTPOST_RATE_LIMIT=5",           // a setting
		"OUTPOST_STRFRY_NOTHING=1",       // nothing near it
		"OUTPOST_NSEC=nsec1x",            // read by nip98 sign
		"OUTPOST_INTERVAL=1m",            // strfry-policy's
		"PATH=/usr/bin", "OUTPOST=x=y=z", // not ours
	})
	want := []string{
		"OUTPOST_RATE_LIMT is not a setting of outpost and is ignored; did you mean OUTPOST_RATE_LIMIT?",
		"OUTPOST_FAUCET_COOLDOWM is not a setting of outpost and is ignored; did you mean OUTPOST_FAUCET_COOLDOWN?",
		"OUTPOST_STRFRY_NOTHING is not a setting of outpost and is ignored",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The warning is logged when outpost starts.
func TestUnknownVariableWarnedAtStart(t *testing.T) {
	t.Setenv("OUTPOST_RATE_LIMT", "5")
	inst := start(t, t.TempDir(), nil)
	testkit.WaitFor(t, 5*time.Second, "the warning", func() bool {
		return strings.Contains(inst.logs.String(), "OUTPOST_RATE_LIMT is not a setting of outpost and is ignored; did you mean OUTPOST_RATE_LIMIT?")
	})
}
