package publish_test

import (
	"os"
	"testing"

	"github.com/outpost-relay/outpost/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.ShortParallel(8) // the tests wait on relays, sockets and timers far more than they compute
	os.Exit(m.Run())
}
