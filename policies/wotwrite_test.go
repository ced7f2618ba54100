package policies

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// RestrictToMembers refuses non-members with "restricted:", but for the
// open kinds and the exempt keys; membership is asked per event.
func TestRestrictToMembers(t *testing.T) {
	members := map[string]bool{"m": true}
	reject := RestrictToMembers(func(pk string) bool { return members[pk] }, []int{1984}, []string{"admin"})
	for _, tc := range []struct {
		pubkey string
		kind   int
		refuse bool
	}{{"m", 1, false}, {"x", 1, true}, {"x", 1984, false}, {"admin", 1, false}} {
		refused, msg := reject(context.Background(), &nostr.Event{PubKey: tc.pubkey, Kind: tc.kind})
		if refused != tc.refuse || (refused && !strings.HasPrefix(msg, "restricted: ")) {
			t.Errorf("%s kind %d: refused %v %q, want refused %v", tc.pubkey, tc.kind, refused, msg, tc.refuse)
		}
	}
	delete(members, "m")
	if refused, _ := reject(context.Background(), &nostr.Event{PubKey: "m", Kind: 1}); !refused {
		t.Error("a key no longer a member still writes")
	}
}

func TestWriteSettingsValid(t *testing.T) {
	s := DefaultWriteSettings()
	if err := s.Valid(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []WriteSettings{{Write: "some"}, {Write: WriteWoT, OpenKinds: []string{"x"}}, {Write: WriteWoT, OpenKinds: []string{"70000"}}} {
		if bad.Valid() == nil {
			t.Errorf("%+v is valid", bad)
		}
	}
}
