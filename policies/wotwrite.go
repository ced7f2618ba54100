package policies

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// WriteSettings say who may write to the relay.
type WriteSettings struct {
	Write     string   `flag:"relay-write" usage:"who may publish: all, or wot (members of the web of trust, --wot-seeds; others get OK false \"restricted: ...\"); without seeds wot accepts everyone, as all does"`
	OpenKinds []string `flag:"relay-write-open-kinds" usage:"with --relay-write wot: kinds anyone may still publish, comma-separated (default: mint reviews, 38000, and reports, 1984, which the directory and moderation weigh by the author's standing instead)"`
}

// Who may write (WriteSettings.Write).
const (
	WriteAll = "all"
	WriteWoT = "wot"
)

// DefaultWriteSettings are the defaults docs/configuration.md lists.
func DefaultWriteSettings() WriteSettings {
	return WriteSettings{Write: WriteAll, OpenKinds: []string{"38000", "1984"}}
}

// Valid checks the settings.
func (s *WriteSettings) Valid() error {
	var errs []error
	if s.Write != WriteAll && s.Write != WriteWoT {
		errs = append(errs, settings.Errorf("relay-write", "all or wot, got %q", s.Write))
	}
	if _, err := s.Kinds(); err != nil {
		errs = append(errs, settings.Errorf("relay-write-open-kinds", "%v", err))
	}
	return errors.Join(errs...)
}

// Kinds are the open kinds as numbers.
func (s *WriteSettings) Kinds() ([]int, error) {
	kinds := make([]int, 0, len(s.OpenKinds))
	for _, k := range s.OpenKinds {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || n > 65535 {
			return nil, errors.New("kinds are numbers from 0 to 65535, got " + strconv.Quote(k))
		}
		kinds = append(kinds, n)
	}
	return kinds, nil
}

// RestrictToMembers is a khatru write policy: it refuses events whose author
// member says is not one, but for the open kinds and the exempt keys (the
// admins, say, who must be able to reach their relay whatever the graph).
// member is asked per event, so a change of the web of trust applies to the
// next event.
func RestrictToMembers(member func(pubkey string) bool, open []int, exempt []string) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if slices.Contains(open, ev.Kind) || slices.Contains(exempt, ev.PubKey) || member(ev.PubKey) {
			return false, ""
		}
		return true, "restricted: this relay takes events only from its web of trust, which does not include your key"
	}
}
