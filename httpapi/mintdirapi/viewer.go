package mintdirapi

import (
	"net/http"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/mintdir/resource"
)

// viewerParam reads ?viewer= (a npub or hex key) as hex; "" when absent.
func viewerParam(r *http.Request) (string, error) {
	v := r.URL.Query().Get("viewer")
	if v == "" {
		return "", nil
	}
	pk, err := pubkey.Parse(v)
	if err != nil {
		return "", outpost.Errorf(outpost.Invalid, "invalid_viewer", "viewer must be a npub or a hex public key").With("field", "viewer")
	}
	return pk, nil
}

// markFollowed marks the reviews whose authors viewer follows — "reviewed
// by people you follow" — and counts them.
func markFollowed(out *resource.Reviews, viewer string, follows func(viewer, author string) bool) {
	n := 0
	for i := range out.Reviews {
		rv := &out.Reviews[i]
		author, _ := pubkey.Parse(rv.PubKey) // a npub ReviewOf made
		f := follows != nil && follows(viewer, author)
		rv.FollowedByViewer = &f
		if f {
			n++
		}
	}
	out.FollowedByViewer = &n
}
