package policies

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// RejectBannedAuthors is a khatru RejectEvent policy that refuses events whose
// author has an active ban in l. It does not allocate.
func RejectBannedAuthors(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if e, ok := l.lookup(ev.PubKey, time.Now().Unix()); ok {
			return true, e.msg
		}
		return false, ""
	}
}

// RejectBannedEvents refuses events a moderator removed (NIP-86 banevent).
func RejectBannedEvents(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if l.EventBanned(ev.ID) {
			return true, "blocked: this event was removed by a moderator"
		}
		return false, ""
	}
}

// RejectBlockedWords is a khatru RejectEvent policy that refuses events whose
// content contains a blocked word of l; for kind-0 profiles every string field
// of the profile JSON is checked.
func RejectBlockedWords(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		msg, blocked := l.BlockedMessage(ev)
		return blocked, msg
	}
}

func blockedIn(l *BanList, ev *nostr.Event) (string, bool) {
	if ev.Kind == 0 {
		var profile map[string]any
		if json.Unmarshal([]byte(ev.Content), &profile) == nil {
			for _, v := range profile {
				if s, ok := v.(string); ok {
					if w, ok := l.BlockedWord(s); ok {
						return w, true
					}
				}
			}
			return "", false
		}
	}
	return l.BlockedWord(ev.Content)
}
