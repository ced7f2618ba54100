package netguard_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/guard/netguard"
	"github.com/outpost-relay/outpost/internal/testkit/netguardtest"
)

func TestPublic(t *testing.T) {
	for _, tt := range []struct {
		addrs  []string
		public bool
	}{{netguardtest.Blocked, false}, {netguardtest.Public, true}} {
		for _, s := range tt.addrs {
			t.Run(s, func(t *testing.T) {
				if got := netguard.Public(netip.MustParseAddr(s)); got != tt.public {
					t.Errorf("Public(%s) = %v, want %v", s, got, tt.public)
				}
			})
		}
	}
}

func TestControl(t *testing.T) {
	for _, s := range netguardtest.Blocked {
		if err := netguard.Control("tcp", netguardtest.HostPort(s, "443"), nil); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("Control(%s) = %v, want ErrBlocked", s, err)
		}
	}
	for _, s := range netguardtest.Public {
		if err := netguard.Control("tcp", netguardtest.HostPort(s, "443"), nil); err != nil {
			t.Errorf("Control(%s) = %v", s, err)
		}
	}
	if err := netguard.Control("tcp", "not an address", nil); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("an unparsable address: %v", err)
	}
}

// ControlExcept lets through exactly the addresses given, and judges every
// other one as Control does.
func TestControlExcept(t *testing.T) {
	control := netguard.ControlExcept("127.0.0.1:3338", "[::1]:3338", "not an address")
	for _, a := range []string{"127.0.0.1:3338", "[::ffff:127.0.0.1]:3338", "[::1]:3338", "93.184.216.34:443"} {
		if err := control("tcp", a, nil); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"127.0.0.1:3339", "127.0.0.2:3338", "10.0.0.1:3338", "[::1]:3339"} {
		if err := control("tcp", a, nil); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%s: %v, want ErrBlocked", a, err)
		}
	}
}

func TestCheckHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, h := range append([]string{"localhost"}, netguardtest.Blocked...) {
		if err := netguard.CheckHost(ctx, nil, h, false); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%s: %v, want ErrBlocked", h, err)
		}
		if err := netguard.CheckHost(ctx, nil, h, true); err != nil && h != "localhost" {
			t.Errorf("%s with private allowed: %v", h, err)
		}
	}
	for _, h := range netguardtest.Public {
		if err := netguard.CheckHost(ctx, nil, h, false); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	if err := netguard.CheckHost(ctx, nil, "no-such-mint.invalid", true); err == nil || errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("an unresolvable host: %v", err)
	}
}
