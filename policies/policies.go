package policies

import (
	"context"
	"encoding/json"
	"strconv"
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

// RejectBannedEvents refuses events a moderator banned (NIP-86 banevent).
func RejectBannedEvents(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if l.EventBanned(ev.ID) {
			return true, "blocked: this event was banned by a moderator"
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

// RejectUnlistedAuthors refuses events whose author is not on l's allow
// list while that list is not empty (NIP-86 allowpubkey).
func RejectUnlistedAuthors(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if !l.MayPublish(ev.PubKey) {
			return true, "restricted: this relay only accepts events from the keys on its allow list"
		}
		return false, ""
	}
}

// RejectDisallowedKinds refuses events of kinds l does not accept (NIP-86
// allowkind, disallowkind).
func RejectDisallowedKinds(l *BanList) func(context.Context, *nostr.Event) (bool, string) {
	return func(_ context.Context, ev *nostr.Event) (bool, string) {
		if !l.KindAccepted(ev.Kind) {
			return true, "blocked: events of kind " + strconv.Itoa(ev.Kind) + " are not accepted by this relay"
		}
		return false, ""
	}
}
